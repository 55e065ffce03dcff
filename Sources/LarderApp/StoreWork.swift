import Dispatch
import LarderHTTP
import LarderStore
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
    private static let queues = (0..<16).map { DispatchQueue(label: "larder.store-work.\($0)") }
    private static let next = Locked(0)

    var isOffloaded: Bool { store.answersLater }

    /// Runs `work` on a store-work thread (any thread, for a store that
    /// answers at once: here).
    func run(_ work: @escaping @Sendable () -> Void) {
        guard isOffloaded else { return work() }
        let i = Self.next.withLock { (n: inout Int) -> Int in n = (n + 1) % Self.queues.count; return n }
        Self.queues[i].async(execute: work)
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
