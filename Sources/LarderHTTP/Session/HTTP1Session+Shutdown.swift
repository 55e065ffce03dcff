import Dispatch
import LarderSupport

/// Ending connections when the server stops (`HTTPServer.shutdown`).
extension HTTP1Session {
    /// Graceful shutdown: close now if idle or only waiting (a parked
    /// request, an event stream), else after the current answer; a lingering
    /// close (now or after that answer) lasts at most `shutdownLingerNanos`.
    func beginShutdown() {
        channel.loop.post { [self] in
            guard !channel.closed else { return }
            if channel.lingering {
                _ = state.shutdown(traffic, hasUnread: channel.hasUnread)
                channel.limitLinger(to: Self.shutdownLingerNanos)
                return
            }
            if state.shutdown(traffic, hasUnread: channel.hasUnread) { channel.close() }
        }
    }

    /// Closes at once (shutdown after the grace period).
    func forceClose() {
        channel.loop.post { [self] in channel.close() }
    }
}
