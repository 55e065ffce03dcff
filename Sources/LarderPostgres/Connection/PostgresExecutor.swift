import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LarderSupport
import LarderValueFile
import Synchronization
import LarderStoreVocabulary

/// Where a pool's tasks run (a server's stores and their namespaces):
/// on the thread of its `PGEventLoop`, which also reads the pool's answers
/// from the database, so that an answer resumes its task with no thread
/// woken. Never on Swift's cooperative pool nor on
/// Dispatch's default one (`.global()`), where connection queues run and
/// where a synchronous caller may block on a reply (`StoreReply.get`: the
/// embedded store's API, a snapshot's producer): callers blocked there
/// could leave no thread to run the tasks they wait for. Jobs are short:
/// tasks wait on database replies as suspended continuations, not on
/// threads, and no job may block (see `blockingReply`).
final class PostgresExecutor: TaskExecutor, @unchecked Sendable {
    /// The loop whose thread runs this executor's jobs and its pool's connections.
    let loop: PGEventLoop
    /// Timers and other short callbacks.
    static let queue = DispatchQueue(label: "larder.postgres.timers")

    private init() { loop = PGEventLoop() }

    /// The executor for a new pool: the process makes up to `maxLoops`,
    /// then pools take them in turn. A server has one pool, so one loop;
    /// a process running many servers (the tests) spreads them, because one
    /// thread among many busy ones gets a small share of the cores, and
    /// every server on it would wait for it.
    static func next() -> PostgresExecutor {
        made.withLock { m in
            defer { m.next += 1 }
            if m.executors.count < maxLoops {
                m.executors.append(PostgresExecutor())
                return m.executors[m.executors.count - 1]
            }
            return m.executors[m.next % maxLoops]
        }
    }
    private static let maxLoops = 8
    private static let made = Locked<(executors: [PostgresExecutor], next: Int)>(([], 0))

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Starts `operation` as a task on this executor.
    @discardableResult
    func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) -> Task<T, Error> {
        Task(executorPreference: self, operation: operation)
    }

    /// `reply` for a caller that will block on it (`get()`: opening a
    /// store, the namespace registry): never from an event loop, where the
    /// tasks it waits for would be queued behind it (or, on another loop,
    /// that loop might be waiting for this one).
    /// Its answer is handed over on the loop (all `get()` does with it is
    /// wake the caller), so that a caller blocked on a hand-off lane would
    /// not wait for the lane itself.
    func blockingReply<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) -> StoreReply<T> {
        precondition(!PGEventLoop.isOnAnyLoop, "a blocking wait on a PostgreSQL event loop")
        return writeReply(operation)
    }

    /// The answer `operation` gives, later: it runs as a task here, and no
    /// thread waits for the database meanwhile. The answer is handed over
    /// on a hand-off lane, not on the loop: what the caller does with a
    /// value or a listing (a body inflated for a client, a multipart
    /// upload's parts joined, a page encoded) must not hold up every other
    /// connection's answers.
    func reply<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) -> StoreReply<T> {
        .later { pending in
            run {
                let result: Result<T, any Error>
                do { result = .success(try await operation()) } catch { result = .failure(error) }
                Self.handOffLane().async { pending.fulfil(result) }
            }
        }
    }

    /// `reply` for a write's outcome (a status, a version): its caller only
    /// answers the client, so it is handed over on the loop, sparing a
    /// thread's wake-up per write. (Also `blockingReply`'s.)
    func writeReply<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) -> StoreReply<T> {
        .later { pending in
            run {
                do { pending.fulfil(.success(try await operation())) } catch { pending.fulfil(.failure(error)) }
            }
        }
    }

    /// Where answers are handed to their callers: serial queues with only
    /// a label, which libdispatch runs on its overcommit pool (a thread
    /// whenever work waits), taken in turn. Never Dispatch's default pool
    /// (`.global()`, or a concurrent queue, which targets it): callers
    /// blocked in `StoreReply.get()` may hold every thread of it, and the
    /// answers they wait for would queue behind them until libdispatch
    /// adds a thread, about one a second (`BlockedDefaultPoolTests`).
    private static let handOffLanes = (0..<4).map { DispatchQueue(label: "larder.postgres.replies.\($0)") }
    private static let nextHandOff = Atomic<Int>(0)

    /// Where `offLoop`'s work runs (label-only serial queues too).
    private static let transformLanes = (0..<2).map { DispatchQueue(label: "larder.postgres.transforms.\($0)") }
    private static let nextTransform = Atomic<Int>(0)

    private static func handOffLane() -> DispatchQueue {
        handOffLanes[nextHandOff.wrappingAdd(1, ordering: .relaxed).oldValue & (handOffLanes.count - 1)]
    }

    /// Runs CPU-heavy `work` (a JSON update's transform) on a queue of its
    /// own while the calling task waits, so that the loop goes on reading
    /// answers; returns what it returns. Not on the hand-off lanes: the
    /// task holds a key's lock and a transaction meanwhile, and must not
    /// wait behind what a caller does with a large value.
    static func offLoop<T>(_ work: @escaping () throws -> T) async throws -> T {
        let job = HandedOver(work)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<HandedOver<Result<T, any Error>>, Never>) in
            transformLanes[nextTransform.wrappingAdd(1, ordering: .relaxed).oldValue & (transformLanes.count - 1)].async { continuation.resume(returning: HandedOver(Result { try job.value() })) }
        }
        return try result.value.get()
    }

    /// Runs blocking work (libpq's connect handshake, polled) on a thread
    /// of its own: rare, and never on the loop the tasks need.
    static func runBlocking(_ work: @escaping @Sendable () -> Void) {
        DetachedThread.start(name: "larder.pg-connect", stackSize: 512 << 10, work)
    }
}

/// A value passed between the loop and the pool thread that works on it,
/// used by one side at a time (the task waits meanwhile).
struct HandedOver<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
