import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import LarderPostgres
import LarderSupport
import LarderTestSupport
import Testing

/// The PostgreSQL store's event loop, with no database: jobs posted from
/// other threads run on the loop's one thread, in order, and `sync` hands
/// a value back from there; a job the loop posts to itself runs after the
/// current one, on the same thread, and never inside it.
@Suite(.blockingLane) struct PGEventLoopTests {
    /// One loop for the suite: a loop's thread runs for the rest of the process.
    static let sharedLoop = PGEventLoop()
    let loop = PGEventLoopTests.sharedLoop

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

    /// Counts what the loop told it, on the loop; can unregister itself from a callback.
    final class Recorder: PGSocketHandler, @unchecked Sendable {
        let fd: Int32
        let loop: PGEventLoop
        var readable = 0, writable = 0, bytes = 0
        var unregisterOnRead = false
        init(fd: Int32, loop: PGEventLoop) { self.fd = fd; self.loop = loop }
        func socketReadable() {
            readable += 1
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = read(fd, &buffer, buffer.count)
            if n > 0 { bytes += n }
            if unregisterOnRead || n == 0 { loop.unregister(fd) }
        }
        func socketWritable() {
            writable += 1
            loop.setWriteInterest(fd, false)
        }
    }

    func socketPair() -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        return (fds[0], fds[1])
    }

    func waitOnLoop(_ condition: @escaping () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if loop.sync(condition) { return true }
            usleep(2_000)
        }
        return false
    }

    @Test func aSocketIsReadWhenBytesComeWrittenWhenAskedAndForgottenWhenUnregistered() {
        let (mine, theirs) = socketPair()
        defer { close(mine); close(theirs) }
        let recorder = Recorder(fd: mine, loop: loop)
        #expect(loop.sync { self.loop.register(mine, recorder) })
        _ = write(theirs, "hello", 5)
        #expect(waitOnLoop { recorder.bytes == 5 }, "the loop did not read what came")
        // Writable once asked (a socket with room is writable at once), then no more.
        loop.sync { self.loop.setWriteInterest(mine, true) }
        #expect(waitOnLoop { recorder.writable == 1 })
        // Unregistered inside its own callback: later bytes are not read.
        loop.sync { recorder.unregisterOnRead = true }
        _ = write(theirs, "x", 1)
        #expect(waitOnLoop { recorder.bytes == 6 })
        let readsBefore = loop.sync { recorder.readable }
        _ = write(theirs, "more", 4)
        usleep(100_000)
        #expect(loop.sync { (recorder.readable, recorder.bytes) } == (readsBefore, 6))
    }

    @Test func aHangUpIsTold() {
        let (mine, theirs) = socketPair()
        defer { close(mine) }
        let recorder = Recorder(fd: mine, loop: loop)
        #expect(loop.sync { self.loop.register(mine, recorder) })
        close(theirs)
        // Read as end of file (0 bytes), which unregisters it.
        #expect(waitOnLoop { recorder.readable >= 1 })
    }

    @Test func epollRefusingASocketIsAFalseRegistration() {
        // A regular file cannot be watched with epoll (EPERM).
        let path = NSTemporaryDirectory() + "pg-event-loop-\(UUID().uuidString)"
        let fd = open(path, O_CREAT | O_RDWR, 0o600)
        defer { close(fd); unlink(path) }
        let recorder = Recorder(fd: fd, loop: loop)
        #expect(loop.sync { self.loop.register(fd, recorder) } == false)
    }
}
