import LarderHTTP
import LarderSharing
import LarderStorage
import LarderSupport

/// The routes of one namespace's API over its store, hub and fault rules:
/// the default namespace's (`LarderServer` adds the server's own routes:
/// metrics, the viewer, `/ns/`) and every `/ns/<name>/`'s, made here once
/// for both so each endpoint works the same in all of them.
enum APIRoutes {
    static func make(store: any ValueStore, hub: ChangeHub, faults: FaultBook?, journal: RequestJournal?,
                     configuration: LarderConfiguration, logger: Logger) -> [(RouteTable.Match, any Route)] {
        let storeRoutes = StoreRoutes(store: store, hub: hub, logger: logger)
        var routes: [(RouteTable.Match, any Route)] = [
            (.prefix("/store/"), storeRoutes),
            (.exact("/store"), storeRoutes),
            (.exact("/events"), EventsRoute(hub: hub, maxBuffered: configuration.eventBufferBytes)),
            (.exact(HealthRoute.path), HealthRoute(store: store, logger: logger)),
            (.exact("/snapshot"), SnapshotRoute(store: store, maxValueBytes: configuration.http.maxBodyBytes, logger: logger)),
            (.exact("/journal"), JournalRoute(journal: journal)),
        ]
        if let faults { routes.append((.exact("/faults"), FaultsRoute(book: faults))) }
        return routes
    }

    /// A named namespace's world: its own hub, fault rules and routes over
    /// the store `open` makes (told of its changes through the hub).
    /// `faultCounts`: where its fault rules' firings are counted (with
    /// `--allow-faults`), labelled with `name`.
    static func world(_ name: String, configuration: LarderConfiguration, journalSequence: JournalSequence, logger: Logger,
                      faultCounts: FaultCounts? = nil,
                      open: (StoreChangeObserver) throws -> any ValueStore) throws -> NamespaceWorld {
        let hub = ChangeHub(historySize: configuration.eventHistory, keepAliveEvery: configuration.eventHeartbeat)
        let firstWrite = FirstWriteMark(before: hub)
        let store: any ValueStore
        do { store = try open(firstWrite) } catch { hub.close(); throw error }
        let faults = configuration.allowFaults ? FaultBook(namespace: name, counts: faultCounts ?? FaultCounts()) : nil
        let journal = configuration.journal > 0 ? RequestJournal(capacity: configuration.journal, sequence: journalSequence, namespace: name) : nil
        let routes = make(store: store, hub: hub, faults: faults, journal: journal, configuration: configuration, logger: logger)
        let table = RouteTable(routes, middleware: faults.map { [FaultMiddleware(book: $0)] } ?? [])
        return NamespaceWorld(name: name, store: store, hub: hub, table: table, journal: journal, firstWrite: firstWrite,
                              faults: faults)
    }
}
