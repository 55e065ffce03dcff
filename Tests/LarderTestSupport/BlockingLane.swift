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
/// pool that was the bound too), and up to two more while the machine's CPU
/// stands idle (bodies that wait on a timeout, a child
/// process's sleep or a browser; see `AsyncTurns`), or exactly
/// `LARDER_TEST_BLOCKING_WIDTH`. The others wait their turn as suspended
/// tasks, which holds no thread.
///
/// Async suites that never block take `.asyncLane` instead;
/// `SuiteLaneTests` checks that every suite names one or the other.
package struct BlockingLane: TestTrait, SuiteTrait, TestScoping {
    package var isRecursive: Bool { true }
    /// Whether its bodies take a free turn before the others' (`longBlockingLane`).
    let first: Bool

    package func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        // The suite's own scope runs as it is; each test case on the executor.
        guard testCase != nil else { return try await function() }
        await BlockingTestExecutor.turns.acquire(first: first)
        defer { BlockingTestExecutor.turns.release() }
        try await TestTimes.measure("blocking", test) {
            try await withTaskExecutorPreference(BlockingTestExecutor.shared) { try await function() }
        }
    }
}

extension Trait where Self == BlockingLane {
    /// Each test body runs off the cooperative pool (`BlockingLane`).
    package static var blockingLane: Self { BlockingLane(first: false) }

    /// The lane for suites whose tests run for tens of seconds, or in a
    /// long serialized chain: their bodies take a free turn before the
    /// other waiters', so that they start early in a run and the short
    /// tests fill in beside them, instead of one starting last and the run
    /// ending with a core idle while it finishes.
    package static var longBlockingLane: Self { BlockingLane(first: true) }
}

/// The task executor of `BlockingLane`: every job on a concurrent queue
/// that targets the overcommit pool, so a job that blocks never holds up
/// another one, and a task a blocking body starts (which inherits this
/// executor) is not queued behind the body that waits for it.
package final class BlockingTestExecutor: TaskExecutor {
    package static let shared = BlockingTestExecutor()

    /// Turns to run a blocking body: see `BlockingLane` and `AsyncTurns`.
    static let turns: AsyncTurns = {
        if let width = ProcessInfo.processInfo.environment["LARDER_TEST_BLOCKING_WIDTH"].flatMap(Int.init) {
            return AsyncTurns(width: width, extra: 0)
        }
        // Two turns more at most, and only while a core's third stands idle
        // (`AsyncTurns` narrows again within a second of the CPU filling):
        // a run held at twice the cores wide whatever the CPU did failed two
        // tests (a database silent for 10 s) when its bursts met. With the
        // scratch files on a tmpfs a run left a fifth of the CPU idle at one
        // turn more (229 s); at two, 200 s.
        return AsyncTurns(width: ProcessInfo.processInfo.activeProcessorCount, extra: 2)
    }()

    private let queue = DispatchQueue(label: "larder.tests.blocking-bodies", attributes: .concurrent)

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
