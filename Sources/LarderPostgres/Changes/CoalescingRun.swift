import LarderSupport

/// A job run as a task on `PostgresExecutor`, one run at a time: asking
/// while it runs makes it run once more when done, however many times it
/// was asked meanwhile (a feed read, a notification to the other servers).
/// With a `spacing`, a run that follows another at once starts no sooner
/// than that after the one before it started, so that more requests share
/// it; a run asked for after a pause starts at once.
final class CoalescingRun: Sendable {
    private let state = Locked((running: false, again: false, stopped: false))
    private let spacingNanos: Int64

    init(spacing seconds: Double = 0) {
        spacingNanos = Int64(seconds * 1e9)
    }

    /// Runs `job` now, or once more after the run in progress.
    func request(_ job: @escaping @Sendable () async -> Void) {
        let start = state.withLock { s -> Bool in
            if s.running { s.again = true; return false }
            s.running = true
            return true
        }
        guard start else { return }
        PostgresExecutor.run { [state, spacingNanos] in
            while true {
                let started = Clock.monotonicNanos()
                await job()
                let wait = spacingNanos - (Clock.monotonicNanos() - started)
                // Asked meanwhile: the requests of the wait share the next run too.
                if wait > 0 && state.withLock({ $0.again }) { try? await Task.sleep(nanoseconds: UInt64(wait)) }
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
