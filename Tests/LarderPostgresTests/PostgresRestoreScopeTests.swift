import Foundation
import LarderPostgres
import LarderStorage
import LarderSupport
import LarderTestSupport
import LarderValueFile
import Testing
import LarderStoreVocabulary

/// What a restore's commit reaches beyond its rows: the read caches of the
/// servers (each drops what the restore replaced, once it commits), and
/// nothing outside its store's schema (a namespace is a store in a schema
/// of its own, on connections it shares with the others).
@Suite(.blockingLane, .serialized, .enabled(if: TestPostgres.isAvailable, "PostgreSQL is not installed (bash Tests/provision.sh installs it)"))
struct PostgresRestoreScopeTests {
    /// Two servers with read caches hold a value; a restore through one
    /// replaces it. Before the commit both keep answering the old value;
    /// after it the restoring server answers the new one at once, the
    /// other as soon as its feed brings the change.
    @Test(arguments: [false, true])
    func cachedValuesGiveWayToTheRestoredOnesAtCommit(replace: Bool) throws {
        let database = try TestPostgres.makePrivate()
        let rig = try RestoreRig(database: database) { $0.cacheBytes = 8 << 20 }
        let store = try rig.open(), other = try rig.open()
        _ = try RestoreRig.put(store, "c/value", Array("old".utf8))
        _ = try RestoreRig.put(store, "c/gone", Array("not restored".utf8))
        // Read twice: cached on both servers (the second read a hit while the feed vouches).
        for server in [store, other] { for _ in 0..<2 { #expect(try RestoreRig.read(server, "c/value").1 == Array("old".utf8)) } }

        let restore = try store.beginRestore(under: StorePrefix(bytes: Array("c/".utf8)), replace: replace)
        try RestoreRig.stage(restore, [("c/value", Array("restored".utf8)), ("c/new", Array("new".utf8))])
        for server in [store, other] {
            #expect(try RestoreRig.read(server, "c/value").1 == Array("old".utf8))
            #expect(throws: StoreError.self) { try RestoreRig.read(server, "c/new") }
        }
        #expect(try restore.commit().get() == 2)

        // Read your writes on the restoring server, at once.
        #expect(try RestoreRig.read(store, "c/value").1 == Array("restored".utf8))
        #expect(try RestoreRig.read(store, "c/new").1 == Array("new".utf8))
        #expect(replace == ((try? RestoreRig.read(store, "c/gone")) == nil))
        // The other server once its feed has the restore (it reads on every notification and sweep).
        try Poll.until(10, "the other server to read the restored value") {
            try RestoreRig.read(other, "c/value").1 == Array("restored".utf8)
        }
        #expect(replace == ((try? RestoreRig.read(other, "c/gone")) == nil))
    }

    /// Namespaces share the connections: a replace restore of a whole
    /// namespace (the root prefix) empties and fills that namespace's
    /// schema only, and only its feed tells of it.
    @Test func aRestoreOfANamespaceStaysInItsSchema() throws {
        let database = try TestPostgres.makePrivate()
        let options = try PostgresStoreOptions(url: database.url(schema: TestPostgres.makeSchemaName()))
        let connections = PostgresConnections(options: options, logger: .silent())
        let (base, namespace) = (ChangeRecorder(), ChangeRecorder())
        let defaultStore = try PostgresStore(options: options, schema: options.schema, connections: connections, changes: base)
        let namespaceSchema = options.schema + "$ns1"
        let namespaceStore = try PostgresStore(options: options, schema: namespaceSchema, connections: connections, changes: namespace)
        defer { namespaceStore.close(); defaultStore.close() }
        for i in 0..<3 {
            _ = try RestoreRig.put(defaultStore, "k\(i)", Array("default \(i)".utf8))
            _ = try RestoreRig.put(namespaceStore, "k\(i)", Array("namespace \(i)".utf8))
        }
        #expect(base.changes(after: 0, count: 3).count == 3)
        #expect(namespace.changes(after: 0, count: 3).count == 3)

        let restore = try namespaceStore.beginRestore(under: StorePrefix.root, replace: true)
        try RestoreRig.stage(restore, [("k1", Array("restored".utf8)), ("other/k", Array("restored too".utf8))])
        #expect(try restore.commit().get() == 2)

        #expect(try RestoreRig.list(namespaceStore, "").map(\.key) == ["k1", "other/k"])
        #expect(try RestoreRig.read(namespaceStore, "k1").1 == Array("restored".utf8))
        #expect(try RestoreRig.list(defaultStore, "").map(\.key) == ["k0", "k1", "k2"])
        #expect(try RestoreRig.read(defaultStore, "k1").1 == Array("default 1".utf8))
        let told = namespace.changes(after: 3, count: 3)
        #expect(told.map { $0.key ?? "prefix \($0.prefix!) \($0.deleted)" } == ["prefix  3", "k1", "other/k"])
        Thread.sleep(forTimeInterval: 1.2)  // a sweep: the default feed reads, and finds nothing new
        #expect(base.count == 3)
        try Poll.until(10, "the namespace's totals") { namespaceStore.stats.keys == 2 }
        #expect(defaultStore.stats.keys == 3)
        #expect(try database.psql("SELECT count(*) FROM \"\(namespaceSchema)\".larder_values") == "2")
    }
}
