import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LarderSupport
import LarderValueFile

/// Where the PostgreSQL store's tasks and timers run: serial Dispatch
/// queues with only a label, which libdispatch puts on its overcommit pool
/// (a thread whenever work waits), never on Swift's cooperative pool nor on
/// Dispatch's default one (`.global()`), where connection queues run and
/// where a synchronous caller may block on a reply (`StoreReply.get`: the
/// embedded store's API, a snapshot's producer). If the store's
/// tasks needed either, callers blocked there could leave no thread to run
/// the tasks they wait for. Jobs are short: tasks wait on database replies
/// as suspended continuations, not on threads.
final class PostgresExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = PostgresExecutor()
    /// Task jobs, spread over a few serial queues (each one thread at most).
    private static let lanes = (0..<8).map { index in
        let lane = DispatchQueue(label: "larder.postgres.tasks.\(index)")
        lane.setSpecific(key: laneKey, value: index)
        return lane
    }
    /// Which lane the current thread is draining, if any.
    private static let laneKey = DispatchSpecificKey<Int>()
    private static let nextLane = Locked(0)
    /// Timers and other short callbacks.
    static let queue = DispatchQueue(label: "larder.postgres.timers")

    /// A job enqueued from a lane (a task resumed by another task's job)
    /// stays on it and runs when the current job ends, on the same thread:
    /// no thread is woken for it. Others take the next lane in turn, and so
    /// does a new task (`run`): whoever starts it may block until it ends
    /// (`blockingReply`). No job on a lane may block (see `blockingReply`):
    /// the tasks it woke would wait behind it.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let current = Self.startingTask.isSet ? nil : DispatchQueue.getSpecific(key: Self.laneKey)
        let lane = current ?? Self.nextLane.withLock { (n: inout Int) -> Int in n = (n + 1) % Self.lanes.count; return n }
        Self.lanes[lane].async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Set on a thread while `run` starts a task there.
    private static let startingTask = ThreadFlag()

    /// Starts `operation` as a task on this executor.
    @discardableResult
    static func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) -> Task<T, Error> {
        let outer = startingTask.isSet
        startingTask.set(true)
        defer { startingTask.set(outer) }
        return Task(executorPreference: shared, operation: operation)
    }

    /// `reply` for a caller that will block on it (`get()`: opening a
    /// store, the namespace registry): never from a lane, where the tasks
    /// it waits for may be queued behind it.
    static func blockingReply<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) -> StoreReply<T> {
        assert(DispatchQueue.getSpecific(key: laneKey) == nil, "a blocking wait on a PostgreSQL task lane")  // in the debug builds the tests run
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
    /// of its own: rare, and never in a lane a task needs.
    static func runBlocking(_ work: @escaping @Sendable () -> Void) {
        let thread = Thread { work() }
        thread.stackSize = 512 << 10
        thread.start()
    }
}

/// A flag of the current thread (a pthread key), for what a callee on the
/// same thread must know of its caller.
private final class ThreadFlag: @unchecked Sendable {
    private var key = pthread_key_t()

    init() { pthread_key_create(&key, nil) }

    var isSet: Bool { pthread_getspecific(key) != nil }

    func set(_ on: Bool) { pthread_setspecific(key, on ? UnsafeRawPointer(bitPattern: 1) : nil) }
}
