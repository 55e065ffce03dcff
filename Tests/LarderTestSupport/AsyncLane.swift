import Testing

/// Runs each test of a suite as a high-priority task. On Linux the Swift
/// runtime gives each task priority a cooperative queue of its own, as
/// wide as the machine has cores (2 here). In a full run the default one
/// holds hundreds of queued synchronous tests, each blocking one of those
/// threads for up to seconds while it talks to a server; an async test in
/// that queue waits behind all of them at every `await` (once for more
/// than 180 s). Async tests, which never block a thread, get the
/// high-priority queue to themselves: their awaits resume at once.
package struct AsyncLane: TestTrait, SuiteTrait, TestScoping {
    package var isRecursive: Bool { true }

    package func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        // The suite's own scope runs as it is; each test case in the lane.
        guard testCase != nil else { return try await function() }
        try await withoutActuallyEscaping(function) { body in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask(priority: .high) { try await TestTimes.measure("async", test, body) }
                try await group.waitForAll()
            }
        }
    }
}

extension Trait where Self == AsyncLane {
    /// Each test runs in the high-priority cooperative queue (`AsyncLane`).
    package static var asyncLane: Self { AsyncLane() }
}
