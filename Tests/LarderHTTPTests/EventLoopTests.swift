import Dispatch
@testable import LarderHTTP
import LarderSupport
import LarderTestSupport
import Testing

/// The event loops the connections live on (`EventLoop`): jobs posted from
/// other threads run on the loop in order, and timers fire in deadline
/// order, never before their deadline, once each; a timer moved later
/// fires only then, one moved earlier fires then, a cancelled one never.
@Suite(.blockingLane) struct EventLoopTests {
    /// What the loop did, in order; touched on the loop only.
    final class Trace: @unchecked Sendable {
        var events: [String] = []
        var early: [String] = []
    }

    @Test func jobsFromOtherThreadsRunOnTheLoopInOrder() {
        let loop = EventLoop.next()
        let trace = Trace()
        let done = DispatchSemaphore(value: 0)
        for i in 0..<100 {
            loop.execute {
                trace.events.append(loop.isCurrent ? "\(i)" : "off the loop")
                if i == 99 { done.signal() }
            }
        }
        done.wait()
        #expect(loop.runAndWait { trace.events } == (0..<100).map { "\($0)" })
        #expect(!loop.isCurrent)
    }

    @Test func timersFireInDeadlineOrderOnceAndNeverEarly() {
        let loop = EventLoop.next()
        let trace = Trace()
        let done = DispatchSemaphore(value: 0)
        let ms: UInt64 = 1_000_000
        loop.runAndWait {
            let start = DispatchTime.now().uptimeNanoseconds
            func timer(_ name: String, at deadline: UInt64, last: Bool = false) -> LoopTimer {
                LoopTimer {
                    trace.events.append(name)
                    if DispatchTime.now().uptimeNanoseconds < deadline { trace.early.append(name) }
                    if last { done.signal() }
                }
            }
            let c = timer("c", at: start + 60 * ms, last: true)
            let a = timer("a", at: start + 20 * ms)
            let b = timer("b", at: start + 40 * ms)
            loop.schedule(c, at: start + 60 * ms)
            loop.schedule(a, at: start + 20 * ms)
            loop.schedule(b, at: start + 40 * ms)
            // Moved later (its first entry goes stale), and moved earlier.
            let later = timer("later", at: start + 50 * ms)
            loop.schedule(later, at: start + 10 * ms)
            loop.schedule(later, at: start + 50 * ms)
            let earlier = timer("earlier", at: start + 5 * ms)
            loop.schedule(earlier, at: start + 45 * ms)
            loop.schedule(earlier, at: start + 5 * ms)
            // Cancelled before it comes due.
            let cancelled = timer("cancelled", at: start + 30 * ms)
            loop.schedule(cancelled, at: start + 30 * ms)
            loop.cancel(cancelled)
        }
        done.wait()
        // A stale entry that fired late would show after "c": look once more.
        let (events, early) = loop.runAndWait { (trace.events, trace.early) }
        #expect(events == ["earlier", "a", "b", "later", "c"])
        #expect(early.isEmpty, "fired before their deadline: \(early)")
    }
}

extension EventLoop {
    /// Runs `body` on the loop and waits for its result (tests only).
    func runAndWait<T>(_ body: @escaping () -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: T?
        post {
            result = body()
            done.signal()
        }
        done.wait()
        return result!
    }
}
