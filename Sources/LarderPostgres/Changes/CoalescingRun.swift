import LarderSupport

/// A job run as a task on `PostgresExecutor`, one run at a time: asking
/// while it runs makes it run once more when done, however many times it
/// was asked meanwhile (a feed read, a notification to the other servers).
final class CoalescingRun: Sendable {
    private let state = Locked((running: false, again: false, stopped: false))

    /// Runs `job` now, or once more after the run in progress.
    func request(_ job: @escaping @Sendable () async -> Void) {
        let start = state.withLock { s -> Bool in
            if s.running { s.again = true; return false }
            s.running = true
            return true
        }
        guard start else { return }
        PostgresExecutor.run { [state] in
            while true {
                await job()
                let more = state.withLock { s -> Bool in
                    if s.again && !s.stopped { s.again = false; return true }
                    s.running = false
                    return false
                }
                if !more { return }
            }
        }
    }

    /// No more runs after the one in progress.
    func stop() { state.withLock { $0.stopped = true } }
}
