import LarderSupport

/// A job run as a task on a `PostgresExecutor`, one run at a time: asking
/// while it runs makes it run once more when done, however many times it
/// was asked meanwhile (a feed read, a notification to the other servers).
/// With a `spacing`, a run starts no sooner than that after the one before
/// it started, so that more requests share it, even when the job itself
/// takes no time; a run asked for after a longer pause starts at once. A
/// request while a run waits to start is that run's: it asks for no other.
final class CoalescingRun: Sendable {
    private let state = Locked((running: false, jobStarted: false, again: false, stopped: false, lastStarted: Int64.min / 2))
    private let spacingNanos: Int64
    private let executor: PostgresExecutor

    /// Runs on `executor` (its pool's).
    init(spacing seconds: Double = 0, on executor: PostgresExecutor) {
        spacingNanos = Int64(seconds * 1e9)
        self.executor = executor
    }

    /// Runs `job` now (or once the spacing allows), or once more after the
    /// run in progress.
    func request(_ job: @escaping @Sendable () async -> Void) {
        let start = state.withLock { s -> Bool in
            if s.running {
                // A run not yet begun (queued, or keeping its spacing) sees this request's cause.
                if s.jobStarted { s.again = true }
                return false
            }
            s.running = true
            s.jobStarted = false
            return true
        }
        guard start else { return }
        executor.run { [state, spacingNanos] in
            while true {
                let wait = state.withLock { $0.lastStarted } + spacingNanos - Clock.monotonicNanos()
                // Asked meanwhile: the requests of the wait share this run too.
                if wait > 0 { try? await Task.sleep(nanoseconds: UInt64(wait)) }
                state.withLock { s in
                    s.lastStarted = Clock.monotonicNanos()
                    s.jobStarted = true
                }
                await job()
                let more = state.withLock { s -> Bool in
                    if s.again && !s.stopped {
                        s.again = false
                        s.jobStarted = false
                        return true
                    }
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
