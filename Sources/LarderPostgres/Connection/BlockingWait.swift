import Dispatch
import LarderSupport

/// Runs `operation` as a task and blocks the calling thread until it is
/// done. For the synchronous `ValueStore` calls that are not on a hot path
/// (deletes, listings, JSON updates): the database round trips themselves
/// still run on Dispatch sources, and the task pool never blocks, so a
/// caller waiting here cannot starve the replies it waits for.
func blockingWait<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let outcome = Locked<Result<T, Error>?>(nil)
    PostgresExecutor.run {
        let result: Result<T, Error>
        do { result = .success(try await operation()) } catch { result = .failure(error) }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try outcome.withLock { $0! }.get()
}
