import Dispatch
import LarderHTTP
import LarderRouting
import LarderModel
import LarderSharing
import LarderStorage
import LarderSupport
import Synchronization

/// The registry of named namespaces (`/ns/<name>/`): one `NamespaceWorld`
/// per name, made on the first request for it (or at start for those the
/// store kept from an earlier run), dropped on `DELETE /ns/<name>`, on
/// `DELETE /ns/`, or after `--namespace-idle` seconds without a request.
/// The default namespace is not in here: it is the server's own store,
/// hub and routes.
///
/// Locking: the `worlds` mutex guards the dictionary only. It is held for a
/// lookup, an insertion (opening the new namespace's store included, so two
/// first requests for one name never open its directory twice; that is a
/// few directory creations) and a removal, with a dropped namespace's data
/// moved out of its name's way (`NamespaceStores.drop`: a rename, or a row
/// of PostgreSQL's registry), so that a request making the name again
/// right after never opens the old data, nor has its new store removed
/// from under it. It is never held while a request runs, a store closes or
/// a dropped namespace's files are deleted; a world's watches and streams
/// end after it is let go.
/// A `Locked` (a pthread mutex), not `Synchronization.Mutex`: that one's
/// futex waits are invisible to ThreadSanitizer, which then reports the
/// worlds handed out under it, and their fields, as races.
package final class Namespaces: @unchecked Sendable {
    typealias MakeWorld = @Sendable (_ name: String, _ store: (StoreChangeObserver) throws -> any ValueStore) throws -> NamespaceWorld

    let stores: any NamespaceStores
    let limit: Int
    private let logger: Logger
    private let makeWorld: MakeWorld
    private let worlds = Locked<[String: NamespaceWorld]>([:])
    /// Checks for idle namespaces (`--namespace-idle`); nil when off.
    private var idleTimer: DispatchSourceTimer?
    private static let timerQueue = DispatchQueue(label: "larder.namespaces.idle", qos: .utility)
    /// Counts the idle sweeps: a request marks its namespace with the
    /// current tick, and a sweep drops those marked long enough ago.
    private let tick = Atomic<UInt64>(0)

    /// Reopens the namespaces `stores` kept. `makeWorld` builds a world's
    /// hub and routes around the store it is given the opener of.
    init(stores: any NamespaceStores, limit: Int, idleSeconds: Double, logger: Logger, makeWorld: @escaping MakeWorld) throws {
        self.stores = stores
        self.limit = limit
        self.logger = logger
        self.makeWorld = makeWorld
        var reopened: [String: NamespaceWorld] = [:]
        for name in try stores.existing() {
            guard (try? NamespaceName.check(name[...])) != nil else {
                logger.warning("namespaces: ignoring a directory whose name is not a namespace name: \(name)")
                continue
            }
            do {
                let world = try open(name)
                world.firstWrite.set()  // it holds data from an earlier run
                reopened[name] = world
            } catch {
                logger.error("namespace \(name): cannot reopen its store, leaving it closed: \(error)")
            }
        }
        worlds.withLock { $0 = reopened }
        if idleSeconds > 0 { startIdleSweep(idleSeconds) }
        stores.whenDroppedElsewhere { [weak self] name in self?.droppedElsewhere(name) }
    }

    /// Another server sharing the store dropped namespace `name`: its
    /// watches and streams end and its store closes here; its data is gone
    /// already, and a next request makes the name afresh.
    private func droppedElsewhere(_ name: String) {
        guard let world = worlds.withLock({ $0.removeValue(forKey: name) }) else { return }
        logger.notice("namespace \(name): dropped through another server")
        close(world)
    }

    private func open(_ name: String) throws -> NamespaceWorld {
        let stores = self.stores, logger = self.logger
        return try makeWorld(name) { changes in try stores.open(name, changes: changes, logger: logger) }
    }

    /// The namespace `name` if it exists (touched: a request came for it).
    package func existing(_ name: String) -> NamespaceWorld? {
        worlds.withLock { worlds in
            guard let world = worlds[name] else { return nil }
            world.touch(tick.load(ordering: .relaxed))
            return world
        }
    }

    /// The namespace `name`, made if it is new; 507 `namespace_limit` when
    /// the server holds `limit` already.
    package func world(_ name: String) throws(HTTPError) -> NamespaceWorld {
        let result: Result<NamespaceWorld, HTTPError> = worlds.withLock { worlds in
            // Touched under the lock: the idle sweep, which looks under it,
            // never drops a namespace a request has just been given.
            if let world = worlds[name] { world.touch(tick.load(ordering: .relaxed)); return .success(world) }
            guard worlds.count < limit else {
                return .failure(HTTPError(HTTPStatus(507, "Insufficient Storage"), .namespaceLimit,
                                          "the server holds \(limit) namespaces already (--max-namespaces)"))
            }
            do {
                let world = try open(name)
                world.touch(tick.load(ordering: .relaxed))
                worlds[name] = world
                return .success(world)
            } catch {
                logger.error("namespace \(name): cannot open its store: \(error)")
                return .failure(HTTPError(.internalServerError, .internalError, "cannot open namespace \(name): \(error)"))
            }
        }
        return try result.get()
    }

    /// The namespaces that exist (written; the ones only read are open but not counted).
    var count: Int { worlds.withLock { $0.values.reduce(0) { $0 + ($1.exists ? 1 : 0) } } }

    /// Clients waiting in any namespace (watches, event streams, journal long polls).
    var listenerCount: Int { worlds.withLock { $0.values.reduce(0) { $0 + $1.listenerCount } } }

    /// Clients waiting on a namespace's `/journal?wait=`.
    var journalWaiterCount: Int {
        worlds.withLock { $0.values.reduce(0) { $0 + ($1.journal?.waiterCount ?? 0) } }
    }

    /// Every namespace that exists, with its totals, by name.
    func list() -> NamespaceList {
        let all = worlds.withLock { $0.values.filter(\.exists).sorted { $0.name < $1.name } }
        return NamespaceList(namespaces: all.map { world in
            let stats = world.store.stats
            return .init(name: world.name, keys: stats.keys, bytes: stats.logicalBytes)
        })
    }

    /// Drops namespace `name`; false when it does not exist (one that was
    /// only read is left open: it never existed for clients).
    func drop(_ name: String) -> Bool {
        let found = worlds.withLock { worlds -> NamespaceWorld? in
            guard let world = worlds[name], world.exists else { return nil }
            worlds[name] = nil
            stores.drop(name, store: world.store, logger: logger)
            return world
        }
        guard let world = found else { return false }
        end(world)
        return true
    }

    /// Drops every namespace; answers how many there were.
    func dropAll() -> Int {
        let all = worlds.withLock { worlds -> [NamespaceWorld] in
            defer { worlds = [:] }
            for world in worlds.values { stores.drop(world.name, store: world.store, logger: logger) }
            return Array(worlds.values)
        }
        for world in all { end(world) }
        return all.count
    }

    /// Ends the world's watches and streams (its store is closed, or
    /// handed to `NamespaceStores.drop`, apart).
    private func end(_ world: NamespaceWorld) {
        world.hub.close()
        world.journal?.close()
    }

    /// Ends the world's watches and streams and closes its store (its data stays).
    private func close(_ world: NamespaceWorld) {
        end(world)
        world.store.close()
    }

    /// Drops, every quarter of `seconds` (at most every 5 s, at least every
    /// 50 ms), the namespaces with no request for `seconds` (up to one
    /// sweep more) and no client waiting on them in that time. One timer for all
    /// namespaces, on a utility queue.
    private func startIdleSweep(_ seconds: Double) {
        let timer = DispatchSource.makeTimerSource(queue: Self.timerQueue)
        let every = min(5, max(0.05, seconds / 4))
        // A request marked with tick t was at most one sweep before tick t+1.
        let ticks = UInt64((seconds / every).rounded(.up)) + 1
        timer.schedule(deadline: .now() + every, repeating: every, leeway: .milliseconds(10))
        timer.setEventHandler { [weak self] in self?.dropIdle(after: ticks, seconds: seconds) }
        idleTimer = timer
        timer.resume()
    }

    private func dropIdle(after ticks: UInt64, seconds: Double) {
        let idle = worlds.withLock { worlds -> [NamespaceWorld] in
            let now = tick.add(1, ordering: .relaxed).newValue
            var idle: [NamespaceWorld] = []
            for world in worlds.values {
                // A long poll is a request until it is answered: the idle
                // time runs from when the last waiting client left, so a
                // follower that polls again at once never finds it gone.
                if world.listenerCount > 0 { world.touch(now) } else if world.idleTicks(now: now) >= ticks { idle.append(world) }
            }
            for world in idle {
                worlds[world.name] = nil
                stores.drop(world.name, store: world.store, logger: logger)
            }
            return idle
        }
        for world in idle {
            logger.notice("namespace \(world.name): dropped after \(seconds) s without a request")
            end(world)
        }
    }

    /// Stops the idle sweep and closes every namespace's store (their data
    /// stays for the next start; a namespace that was only read is dropped,
    /// so it does not come back as one that exists), then what they share.
    func shutdown() {
        idleTimer?.cancel()
        let all = worlds.withLock { worlds -> [NamespaceWorld] in
            defer { worlds = [:] }
            return Array(worlds.values)
        }
        for world in all {
            if world.exists {
                close(world)
            } else {
                stores.drop(world.name, store: world.store, logger: logger)
                end(world)
            }
        }
        stores.close()
    }
}
