import Dispatch

/// Where the PostgreSQL store's tasks and other work run: a concurrent
/// Dispatch queue on the overcommit pool, neither Swift's cooperative pool
/// nor Dispatch's default one (`.global()`, where connection queues run
/// and may be blocked in a synchronous store call). The store's
/// synchronous calls block their caller until a task is done
/// (`blockingWait`); if those tasks needed the cooperative pool, a caller
/// that is itself on it (a test, an embedding app's async code) could
/// block every one of its few threads and no task would ever run. Here a
/// task always finds a thread, and the waiting is on database replies, so
/// tasks hold threads only while they compute.
final class PostgresExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = PostgresExecutor()
    /// Connects, timers and tasks: never a queue of the default pool.
    static let queue = DispatchQueue(label: "larder.postgres", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        Self.queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Starts `operation` as a task on this executor.
    @discardableResult
    static func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) -> Task<T, Error> {
        Task(executorPreference: shared, operation: operation)
    }
}
