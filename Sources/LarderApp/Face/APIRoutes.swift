import LarderHTTP
import LarderRouting
import LarderSharing
import LarderStorage
import LarderSupport

/// The routes of one namespace's API over its store, hub and fault rules:
/// the default namespace's (`LarderAPI` adds the server's own routes:
/// metrics, the viewer, `/ns/`) and every `/ns/<name>/`'s, made here once
/// for both so each endpoint works the same in all of them.
enum APIRoutes {
    static func make(store: any ValueStore, hub: ChangeHub, faults: FaultBook?, journal: RequestJournal?,
                     settings: APISettings, logger: Logger) -> [(RouteTable.Match, any Route)] {
        let storeRoutes = StoreRoutes(store: store, hub: hub, logger: logger)
        var routes: [(RouteTable.Match, any Route)] = [
            (.prefix("/store/"), storeRoutes),
            (.exact("/store"), storeRoutes),
            (.exact("/events"), EventsRoute(hub: hub, maxBuffered: settings.eventBufferBytes)),
            (.exact(HealthRoute.path), HealthRoute(store: store, logger: logger)),
            (.exact("/snapshot"), SnapshotRoute(store: store, maxValueBytes: settings.maxBodyBytes, logger: logger)),
            (.exact("/journal"), JournalRoute(journal: journal)),
            (.exact("/clock"), ClockRoute(store: store, logger: logger)),
        ]
        routes.append((.exact("/faults"), faults.map { FaultsRoute(book: $0) as any Route } ?? FaultsOffRoute()))
        return routes
    }

    /// A named namespace's world: its own hub, fault rules and routes over
    /// the store `open` makes (told of its changes through the hub).
    /// `faultCounts`: where its fault rules' firings are counted (with
    /// `--allow-faults`), labelled with `name`.
    static func world(_ name: String, settings: APISettings, journalSequence: JournalSequence, logger: Logger,
                      faultCounts: FaultCounts? = nil,
                      open: (StoreChangeObserver) throws -> any ValueStore) throws -> NamespaceWorld {
        let hub = ChangeHub(historySize: settings.eventHistory, keepAliveEvery: settings.eventHeartbeat)
        let firstWrite = FirstWriteMark(before: hub)
        let store: any ValueStore
        do { store = try open(firstWrite) } catch { hub.close(); throw error }
        let faults = settings.allowFaults ? FaultBook(namespace: name, counts: faultCounts ?? FaultCounts()) : nil
        let journal = settings.journal > 0 ? RequestJournal(capacity: settings.journal, sequence: journalSequence, clock: store.clock,
                                                                namespace: name) : nil
        let routes = make(store: store, hub: hub, faults: faults, journal: journal, settings: settings, logger: logger)
        let table = RouteTable(routes, middleware: faults.map { [FaultMiddleware(book: $0)] } ?? [])
        return NamespaceWorld(name: name, store: store, hub: hub, table: table, journal: journal, firstWrite: firstWrite,
                              faults: faults)
    }
}
