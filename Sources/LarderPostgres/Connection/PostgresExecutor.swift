import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LarderSupport
import LarderValueFile

/// Where the PostgreSQL store's tasks run: on the thread of `PGEventLoop`,
/// which also reads the database's answers, so that an answer resumes its
/// task with no thread woken. Never on Swift's cooperative pool nor on
/// Dispatch's default one (`.global()`), where connection queues run and
/// where a synchronous caller may block on a reply (`StoreReply.get`: the
/// embedded store's API, a snapshot's producer): callers blocked there
/// could leave no thread to run the tasks they wait for. Jobs are short:
/// tasks wait on database replies as suspended continuations, not on
/// threads, and no job may block (see `blockingReply`).
final class PostgresExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = PostgresExecutor()
    /// Timers and other short callbacks.
    static let queue = DispatchQueue(label: "larder.postgres.timers")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        PGEventLoop.shared.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Starts `operation` as a task on this executor.
    @discardableResult
    static func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) -> Task<T, Error> {
        Task(executorPreference: shared, operation: operation)
    }

    /// `reply` for a caller that will block on it (`get()`: opening a
    /// store, the namespace registry): never from the event loop, where the
    /// tasks it waits for would be queued behind it.
    static func blockingReply<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) -> StoreReply<T> {
        assert(!PGEventLoop.shared.isCurrent, "a blocking wait on the PostgreSQL event loop")  // in the debug builds the tests run
        return reply(operation)
    }

    /// The answer `operation` gives, later: it runs as a task here, and no
    /// thread waits for the database meanwhile.
    static func reply<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) -> StoreReply<T> {
        .later { pending in
            run {
                do { pending.fulfil(.success(try await operation())) } catch { pending.fulfil(.failure(error)) }
            }
        }
    }

    /// Runs blocking work (libpq's connect handshake, polled) on a thread
    /// of its own: rare, and never on the loop the tasks need.
    static func runBlocking(_ work: @escaping @Sendable () -> Void) {
        let thread = Thread { work() }
        thread.stackSize = 512 << 10
        thread.start()
    }
}
