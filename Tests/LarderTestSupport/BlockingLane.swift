import Dispatch
import Foundation
import LarderSupport
import Testing

/// Runs each test of a suite on threads of its own instead of Swift's
/// cooperative pool. Most of the suite's tests are synchronous and block
/// while they talk to a server over a socket, wait for a child process or
/// sleep through a fault's delay. Run on the cooperative pool, which is as
/// wide as the machine has cores (2 here), two of them stall every async
/// test and every async part of the server in the process at each `await`;
/// a full run under load once held an async test's body for 60 s. Under
/// this trait a blocking body costs a thread of `BlockingTestExecutor`
/// (an overcommit Dispatch queue, which adds a thread when all of its own
/// are blocked) and the cooperative pool stays free.
///
/// As many bodies run at once as the machine has cores (on the cooperative
/// pool that was the bound too; Swift Testing alone would start twice as
/// many), or `LARDER_TEST_BLOCKING_WIDTH`. The others wait their turn as
/// suspended tasks, which holds no thread.
///
/// Async suites that never block take `.asyncLane` instead;
/// `SuiteLaneTests` checks that every suite names one or the other.
package struct BlockingLane: TestTrait, SuiteTrait, TestScoping {
    package var isRecursive: Bool { true }

    package func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        // The suite's own scope runs as it is; each test case on the executor.
        guard testCase != nil else { return try await function() }
        await BlockingTestExecutor.turns.acquire()
        defer { BlockingTestExecutor.turns.release() }
        try await withTaskExecutorPreference(BlockingTestExecutor.shared) { try await function() }
    }
}

extension Trait where Self == BlockingLane {
    /// Each test body runs off the cooperative pool (`BlockingLane`).
    package static var blockingLane: Self { BlockingLane() }
}

/// The task executor of `BlockingLane`: every job on a concurrent queue
/// that targets the overcommit pool, so a job that blocks never holds up
/// another one, and a task a blocking body starts (which inherits this
/// executor) is not queued behind the body that waits for it.
package final class BlockingTestExecutor: TaskExecutor {
    package static let shared = BlockingTestExecutor()

    /// Turns to run a blocking body: see `BlockingLane`.
    static let turns = AsyncTurns(width: ProcessInfo.processInfo.environment["LARDER_TEST_BLOCKING_WIDTH"].flatMap(Int.init)
                                      ?? ProcessInfo.processInfo.activeProcessorCount)

    private let queue = DispatchQueue(label: "larder.tests.blocking-bodies", attributes: .concurrent)

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

/// A counting semaphore for async code: `acquire` suspends (holding no
/// thread) while `width` turns are taken, and `release` hands the turn to
/// the longest waiter. (`Locked`, not `Mutex`: ThreadSanitizer cannot see
/// the standard library's futex waits and reports a race under `Mutex`.)
final class AsyncTurns: Sendable {
    private struct State {
        var free: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Locked<State>

    init(width: Int) { state = Locked(State(free: max(1, width))) }

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                guard state.free > 0 else {
                    state.waiters.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
