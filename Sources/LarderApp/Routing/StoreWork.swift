import Dispatch
import LarderHTTP
import LarderStorage
import LarderValueFile
import LarderSupport

/// Route work that waits on a store's synchronous calls, for a store whose
/// calls are network round trips (`ValueStore.answersLater`: PostgreSQL).
/// It runs on one of a few threads of its own, and the connection's thread
/// goes back to serving at once. Requests beyond those threads wait in the
/// queues as closures: memory, not threads. (A connection thread blocked
/// on the database for each of a thousand requests would take every thread
/// Dispatch has, the database replies' included.)
///
/// For a store that answers at once (the disk store) nothing changes: the
/// work runs inline, on the connection's thread.
struct StoreWork: Sendable {
    let store: any ValueStore

    /// Threads at most, across the process; more than the database pool
    /// (`--pg-pool`, 8), so that connections, not threads, are what runs out.
    static let threads = 16

    /// Work not yet started, oldest first, and how many workers are busy;
    /// a worker takes the next item when it is done with one, so a slow
    /// call holds up only its own worker.
    private struct Backlog {
        var waiting: [@Sendable () -> Void] = []
        var head = 0
        /// Workers not running, by index into `workers`.
        var idle = Array(0..<StoreWork.threads)
    }
    private static let backlog = Locked(Backlog())
    /// One serial queue per worker: a queue with only a label is on
    /// Dispatch's overcommit pool, so a worker waiting on the database
    /// never holds one of the default pool's few threads (the connections').
    private static let workers = (0..<threads).map { DispatchQueue(label: "larder.store-work.\($0)") }

    var isOffloaded: Bool { store.answersLater }

    /// Runs `work` on a store-work thread (any thread, for a store that
    /// answers at once: here).
    func run(_ work: @escaping @Sendable () -> Void) {
        guard isOffloaded else { return work() }
        let worker = Self.backlog.withLock { b -> Int? in
            b.waiting.append(work)
            return b.idle.popLast()
        }
        if let worker { Self.workers[worker].async { Self.drain(worker) } }
    }

    /// A worker: runs waiting work until there is none.
    private static func drain(_ worker: Int) {
        while let next = backlog.withLock({ b -> (@Sendable () -> Void)? in
            guard b.head < b.waiting.count else {
                b.waiting.removeAll(keepingCapacity: true)
                b.head = 0
                b.idle.append(worker)
                return nil
            }
            defer { b.head += 1 }
            return b.waiting[b.head]
        }) {
            next()
        }
    }

    /// The answer `body` makes: now for a store that answers at once,
    /// else `.later`, through `responder`, from a store-work thread.
    func answer(_ responder: HTTPResponder,
                _ body: @escaping @Sendable () throws(HTTPError) -> HTTPResponse) throws(HTTPError) -> RouteAnswer {
        guard isOffloaded else { return .respond(try body()) }
        run {
            do throws(HTTPError) {
                responder.respond(try body())
            } catch {
                responder.respond(error.response)
            }
        }
        return .later
    }
}
