import Dispatch
import Synchronization

/// Idleness, for the connection cap: the session says when it has nothing
/// in flight (`idleSince`), and closes when the listener picks it to make
/// room (`evict`). On the channel's loop, but for `evict`'s claim.
extension HTTP1Session {
    /// `idleSince` while a request is in flight (read, parked, answered or
    /// its answer still going out).
    static let busy = UInt64.max

    /// After a drive: a connection with nothing in flight and nothing to
    /// send is idle from now (the time stays that of its first idle moment).
    func markIdleIfSo() {
        guard responder == nil, outgoing == nil, channel.output.isEmpty,
              idleSince.load(ordering: .relaxed) == Self.busy else { return }
        idleSince.store(now, ordering: .relaxed)
    }

    /// The listener is at its connection cap and chose this one, idle since
    /// `since`: it closes if it is still idle (no request read, parked or
    /// answered since), quietly, as an idle keep-alive connection may be.
    /// False when it was picked already or is busy now.
    func evict(idleSince since: UInt64) -> Bool {
        // Claimed by one eviction only: it reads as busy from here.
        guard idleSince.compareExchange(expected: since, desired: Self.busy, ordering: .relaxed).exchanged else { return false }
        channel.loop.post { [self] in
            guard !channel.closed else { return }
            if responder == nil && outgoing == nil && channel.output.isEmpty && state.request == nil {
                channel.close()
            } else {
                // A request arrived meanwhile: it stays, and is idle again after it.
                markIdleIfSo()
            }
        }
        return true
    }
}
