import Dispatch
import Foundation
@testable import LarderPostgres
import LarderSupport
import Testing

/// The PostgreSQL store's event loop, with no database: jobs posted from
/// other threads run on the loop's one thread, in order, and `sync` hands
/// a value back from there; a job the loop posts to itself runs after the
/// current one, on the same thread, and never inside it.
@Suite struct PGEventLoopTests {
    let loop = PGEventLoop.shared

    @Test func syncRunsOnTheLoopAndReturnsItsValue() {
        #expect(!loop.isCurrent)
        let onLoop = loop.sync { self.loop.isCurrent }
        #expect(onLoop)
        #expect(loop.sync { 6 * 7 } == 42)
    }

    @Test func jobsFromManyThreadsRunOneAtATimeEachThreadsInOrder() {
        let threads = 4, perThread = 2_000
        // Touched only on the loop: no lock, so ThreadSanitizer would see two jobs at once.
        final class Seen: @unchecked Sendable { var last = [Int](repeating: -1, count: 4); var count = 0; var outOfOrder = 0 }
        let seen = Seen()
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread {
                loop.execute {
                    if seen.last[t] != i - 1 { seen.outOfOrder += 1 }
                    seen.last[t] = i
                    seen.count += 1
                }
            }
        }
        let (count, outOfOrder) = loop.sync { (seen.count, seen.outOfOrder) }
        #expect(count == threads * perThread)
        #expect(outOfOrder == 0)
    }

    @Test func aJobPostedOnTheLoopRunsAfterTheCurrentOneOnTheSameThread() {
        let order = loop.sync { () -> Locked<[String]> in
            let order = Locked<[String]>([])
            self.loop.execute { order.withLock { $0.append("posted, on the loop: \(self.loop.isCurrent)") } }
            order.withLock { $0.append("current") }
            return order
        }
        // A round through the loop: the posted job has run by then.
        _ = loop.sync { 0 }
        #expect(order.withLock { $0 } == ["current", "posted, on the loop: true"])
    }
}
