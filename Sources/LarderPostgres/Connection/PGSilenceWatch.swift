import Dispatch
import LarderSupport
import Synchronization

/// Notices a connection whose statement has gone unanswered past its
/// allowance, with one timer for the whole process instead of one per
/// statement (a timer made, rescheduled on every read and cancelled, per
/// round trip, kept libdispatch's manager thread busy: an eighth of the
/// server's CPU on a write load).
///
/// A connection sets its deadline (`PGSilenceWatch.Deadline`, monotonic
/// nanoseconds; 0 while nothing is asked) when it sends and on every byte
/// it reads; the watch looks at every deadline each `tick` and tells a
/// connection past its deadline, on the connection's event loop, which
/// checks again there before giving up. So a silence is noticed between
/// its allowance and a tick (and the timer's 50 ms leeway) after it.
final class PGSilenceWatch: Sendable {
    static let shared = PGSilenceWatch()
    /// How often the deadlines are looked at.
    static let tick: DispatchTimeInterval = .milliseconds(200)

    /// A connection's deadline, shared with the watch.
    final class Deadline: Sendable {
        let nanos = Atomic<Int64>(0)
        /// Called on the watch's queue when `nanos` has passed.
        let expired: @Sendable () -> Void
        init(expired: @escaping @Sendable () -> Void) { self.expired = expired }
    }

    private let watched = Locked<[ObjectIdentifier: Deadline]>([:])
    private let queue = DispatchQueue(label: "larder.postgres.silence")
    /// Made with the first connection, once.
    private let timer = Locked<DispatchSourceTimer?>(nil)

    /// Starts watching `deadline` (a connection, from when it is made).
    func watch(_ deadline: Deadline) {
        watched.withLock { $0[ObjectIdentifier(deadline)] = deadline }
        timer.withLock { timer in
            guard timer == nil else { return }
            let made = DispatchSource.makeTimerSource(queue: queue)
            made.schedule(deadline: .now() + Self.tick, repeating: Self.tick, leeway: .milliseconds(50))
            made.setEventHandler { [weak self] in self?.look() }
            made.resume()
            timer = made
        }
    }

    /// Stops watching it (the connection closed).
    func unwatch(_ deadline: Deadline) {
        _ = watched.withLock { $0.removeValue(forKey: ObjectIdentifier(deadline)) }
    }

    private func look() {
        let now = Clock.monotonicNanos()
        let due = watched.withLock { all in
            all.values.filter { d in
                let at = d.nanos.load(ordering: .relaxed)
                return at != 0 && at < now
            }
        }
        for deadline in due { deadline.expired() }
    }
}
