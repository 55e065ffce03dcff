import LarderHTTP
import LarderRouting
import LarderSharing
import LarderStorage
import LarderSupport

/// The Larder API face: `/store/`, `/events`, `/snapshot`, `/journal`,
/// `/faults`, `/healthz`, `/metrics`, the viewer and `/ns/<name>/`, as one
/// route table (`table`, an `HTTPServer`'s handler) over a store the
/// server opened. It knows no other face: the server that composes it
/// (`LarderServer`) hands it the other faces' metrics and reads its
/// namespaces, journal and fault rules to give them to S3.
package final class LarderAPI: Sendable {
    /// The handler of the server's HTTP listener.
    package let table: RouteTable
    package let hub: ChangeHub
    /// The default namespace's request journal (nil with `--journal 0`).
    package let journal: RequestJournal?
    /// The default namespace's fault rules (nil without `--allow-faults`).
    package let faults: FaultBook?
    /// The named namespaces (`/ns/<name>/`); nil when the store has none.
    package let namespaces: Namespaces?

    /// `store`: the default namespace's, opened by the server and telling
    /// `hub` of its changes. `otherFaces`: what `/metrics` shows after its
    /// own families. Throws when the namespaces' registry cannot start.
    package init(store: any ValueStore, hub: ChangeHub, settings: APISettings, middleware: APIMiddleware,
                metrics: HTTPServerMetrics, otherFaces: [any MetricsFamilies], logger: Logger) throws {
        self.hub = hub
        faults = middleware.faults
        let sequence = JournalSequence()
        let journal = settings.journal > 0 ? RequestJournal(capacity: settings.journal, sequence: sequence, clock: store.clock) : nil
        self.journal = journal
        let apiRoutes = APIRoutes.make(store: store, hub: hub, faults: middleware.faults, journal: journal, settings: settings,
                                       logger: logger)
        let faultCounts = middleware.faultCounts
        let namespaces = try settings.namespaceStores.map { stores in
            try Namespaces(stores: stores, limit: settings.maxNamespaces, idleSeconds: settings.namespaceIdleSeconds,
                           logger: logger) { name, open in
                try APIRoutes.world(name, settings: settings, journalSequence: sequence, logger: logger,
                                    faultCounts: faultCounts, open: open)
            }
        }
        self.namespaces = namespaces
        var routes = apiRoutes
        // Right after the store's routes: a request for a new namespace is
        // found third, and a default one is looked at as before. (One for a
        // namespace that exists is served before the lookup: the table's
        // intake mounts it.)
        let namespaceRoute = NamespaceRoute(namespaces: namespaces, routes: RouteTable(apiRoutes, middleware: []))
        routes.insert(contentsOf: [(.prefix(NamespacePath.prefix), namespaceRoute), (.exact("/ns"), namespaceRoute)], at: 2)
        routes.append((.exact("/metrics"), MetricsRoute(http: metrics, store: store, hub: hub, namespaces: namespaces,
                                                        faults: faultCounts, otherFaces: otherFaces,
                                                        startTime: Double(Clock.nowNanos()) / 1e9)))
        let files = StaticFiles(files: settings.publicDirectory.map { .directory($0) } ?? .embedded)
        routes += StaticFiles.paths.map { ($0, files) }
        // The journal before the chain: it records what the client got,
        // answers of the chain's links (a preflight, a 401, a fault) included.
        let intake = journal == nil && namespaces == nil
            ? nil : APIIntake(journal: journal.map { JournalAttachment(journal: $0, namespaces: namespaces) }, namespaces: namespaces)
        table = RouteTable(routes, middleware: middleware.chain, intake: intake)
    }

    /// Clients waiting on `?wait` and open event streams, right now.
    package var watcherCount: Int { hub.watcherCount }
    package var eventStreamCount: Int { hub.subscriberCount }

    /// Clients waiting on `/journal?wait=`, in every namespace, right now.
    package var journalWaiterCount: Int { (journal?.waiterCount ?? 0) + (namespaces?.journalWaiterCount ?? 0) }

    /// Clients waiting in named namespaces (watches, event streams, journal long polls).
    package var namespaceListenerCount: Int { namespaces?.listenerCount ?? 0 }

    /// Named namespaces open now (the default one not counted).
    package var namespaceCount: Int { namespaces?.count ?? 0 }

    /// Drops the namespaces (their stores closed); the server closes the default store.
    package func shutdown() { namespaces?.shutdown() }
}
