import Dispatch
import LarderSupport
import LarderTestSupport
import Testing
import LarderStoreVocabulary

/// `StoreReply`, the one shape of a store's answer: given now it is handed
/// over inline, on the caller's thread; given later it is handed over once,
/// on the thread that fulfils it, to whichever form the caller used.
@Suite(.blockingLane) struct StoreReplyTests {
    struct Failed: Error, Equatable { let why: String }

    /// A reply fulfilled from another thread after `delay` milliseconds.
    static func later<T: Sendable>(_ result: Result<T, any Error>, after delay: Int = 20) -> StoreReply<T> {
        .later { pending in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) { pending.fulfil(result) }
        }
    }

    /// Records what reached it and where.
    struct Recorder: StoreReplyReceiver {
        let got = Locked<[Int]>([])
        func receive(_ result: Result<Int, any Error>) { got.withLock { $0.append((try? result.get()) ?? -1) } }
    }

    @Test func anAnswerGivenNowRunsTheContinuationBeforeWhenDoneReturns() {
        let seen = Locked<Int?>(nil)
        StoreReply<Int>.now(.success(7)).whenDone { result in seen.withLock { $0 = try? result.get() } }
        #expect(seen.withLock { $0 } == 7)

        let recorder = Recorder()
        StoreReply<Int>.catching { 8 }.deliver(to: recorder)
        #expect(recorder.got.withLock { $0 } == [8])
    }

    @Test func anAnswerGivenLaterReachesEveryForm() async throws {
        // get() blocks until the other thread fulfils it.
        #expect(try Self.later(.success(1)).get() == 1)
        #expect(throws: Failed(why: "db")) { try Self.later(Result<Int, any Error>.failure(Failed(why: "db"))).get() }
        // value suspends.
        #expect(try await Self.later(.success(2)).value == 2)
        // whenDone and deliver(to:) run on the fulfilling thread, once.
        let done = DispatchSemaphore(value: 0)
        let recorder = Recorder()
        let reply = Self.later(Result<Int, any Error>.success(3))
        reply.deliver(to: recorder)
        Self.later(Result<Int, any Error>.success(4)).whenDone { _ in done.signal() }
        #expect(done.wait(timeout: .now() + 10) == .success)
        try Poll.until(10, "the later answer delivered") { recorder.got.withLock { $0 } == [3] }
    }

    @Test func aContinuationRegisteredAfterTheAnswerRunsAtOnce() {
        let pending = StorePending<Int>()
        pending.fulfil(.success(5))
        pending.fulfil(.success(6))  // only the first counts
        let seen = Locked<Int?>(nil)
        pending.whenDone { result in seen.withLock { $0 = try? result.get() } }
        #expect(seen.withLock { $0 } == 5)
    }

    @Test func chainedRepliesStayNowWhenBothAreNowAndWaitOtherwise() throws {
        let nowChain = StoreReply<Int>.now(.success(2)).map { $0 * 10 }.then { r in .now(r.map { $0 + 1 }) }
        guard case .now(.success(21)) = nowChain else {
            Issue.record("a chain of answers given now is given now: \(nowChain)")
            return
        }
        let laterChain = Self.later(Result<Int, any Error>.success(2)).map { $0 * 10 }.then { r in Self.later(r.map { $0 + 1 }) }
        guard case .later = laterChain else {
            Issue.record("a chain with a later answer is later")
            return
        }
        #expect(try laterChain.get() == 21)
        // An error passes through map untouched.
        #expect(throws: Failed(why: "x")) { try StoreReply<Int>.now(.failure(Failed(why: "x"))).map { $0 + 1 }.get() }
    }
}
