import Foundation
import LarderBackends
import LarderDiskStore
import LarderFixtures
import LarderStorage
import LarderSupport
import LarderTestSupport
import LarderValueFile
import Testing
import LarderStoreVocabulary

/// The keys of the changes a store reported.
final class ChangeLog: StoreChangeObserver, @unchecked Sendable {
    private let lock = NSLock()
    private var changes: [StoreChange] = []
    func storeDidChange(_ change: StoreChange) { lock.withLock { changes.append(change) } }
    var keys: [String?] { lock.withLock { changes.map(\.key) } }
}

/// `StoreChoice`, the one place that builds a store from `larder serve`'s
/// flags: the disk store in the data directory, or the same under the
/// fixtures of `--fixtures` (compiled once into `<data>/fixture-cache` and
/// shared by the namespaces' stores). Real directories, real stores; the
/// PostgreSQL choice runs in `LarderPostgresTests` and `.ci/postgres-api`,
/// whose servers `TestServer` builds with it.
@Suite(.blockingLane) struct StoreChoiceTests {
    static func options(_ directory: String) -> DiskStoreOptions {
        DiskStoreOptions(dataDirectory: directory, fsync: false)
    }

    static func write(_ store: any ValueStore, _ key: String, _ text: String) throws {
        let writer = try store.beginUpload(key: try StoreKey(key), contentType: "text/plain", encoding: .identity,
                                           expiresNanos: nil, condition: nil)
        try Array(text.utf8).withUnsafeBytes { try writer.write($0) }
        _ = try writer.finish().get()
    }

    static func size(_ store: any ValueStore, _ key: String) throws -> UInt64? {
        try store.currentMetadata(of: try StoreKey(key)).get()?.size
    }

    @Test func withoutFixturesItIsTheDiskStoreInTheDataDirectory() throws {
        let data = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let choice = StoreChoice(disk: Self.options(data))
        #expect(choice.description == data, "the start-up line names the data directory")
        let (factory, namespaces) = choice.stores()
        #expect(namespaces is DiskNamespaceStores)
        let changes = ChangeLog()
        let store = try factory(changes, .silent())
        defer { store.close() }
        #expect(store is DiskStore)
        #expect(store.fixtureStats == nil)

        try Self.write(store, "a/b", "hello")
        #expect(try Self.size(store, "a/b") == 5)
        #expect(StoreTestSupport.valueFiles(data).count == 1, "one value file under \(data)/values")
        #expect(changes.keys == ["a/b"], "the factory's observer hears the store's changes")
        #expect(!FileManager.default.fileExists(atPath: data + "/fixture-cache"))
    }

    @Test func withFixturesTheDiskStoreReadsOverThemAndNeverWritesThem() throws {
        let data = TestServer.makeTempDirectory()
        let fixtures = try FixtureDirectories.numbered(3)
        defer {
            try? FileManager.default.removeItem(atPath: data)
            try? FileManager.default.removeItem(atPath: fixtures)
        }
        let before = StoreTestSupport.regularFiles(under: fixtures).sorted()
        let (factory, namespaces) = StoreChoice(disk: Self.options(data), fixturesDirectory: fixtures).stores()
        defer { namespaces.close() }
        let store = try factory(ChangeLog(), .silent())
        defer { store.close() }

        let layered = try #require(store as? LayeredStore)
        #expect(layered.diskStore != nil, "the store under the fixtures is the disk store")
        #expect(store.fixtureStats?.keys == 3)
        #expect(try Self.size(store, "f/0001.json") == UInt64("{\"i\":1}".utf8.count))
        #expect(FileManager.default.fileExists(atPath: data + "/fixture-cache"), "compiled into the data directory")

        try Self.write(store, "f/0001.json", "mine")
        #expect(try Self.size(store, "f/0001.json") == 4, "the store's value over the fixture")
        #expect(store.stats.keys == 1)
        #expect(StoreTestSupport.regularFiles(under: fixtures).sorted() == before, "the fixtures directory is read only")
    }

    @Test func eachNamespaceIsADiskStoreOfItsOwnOverTheSameFixtures() throws {
        let data = TestServer.makeTempDirectory()
        let fixtures = try FixtureDirectories.numbered(2)
        defer {
            try? FileManager.default.removeItem(atPath: data)
            try? FileManager.default.removeItem(atPath: fixtures)
        }
        let (factory, namespaces) = StoreChoice(disk: Self.options(data), fixturesDirectory: fixtures).stores()
        defer { namespaces.close() }
        let store = try factory(ChangeLog(), .silent())
        defer { store.close() }
        #expect(try namespaces.existing() == [])

        let team = try namespaces.open("team", changes: ChangeLog(), logger: .silent())
        #expect(team.fixtureStats?.keys == 2, "the namespace sees the fixtures too")
        #expect(try Self.size(team, "f/0000.json") != nil)
        try Self.write(team, "only-in-team", "x")
        #expect(try Self.size(team, "only-in-team") == 1)
        #expect(try Self.size(store, "only-in-team") == nil, "the default store is another store")
        #expect(try namespaces.existing() == ["team"], "its data is under <data>/ns/team")

        namespaces.drop("team", store: team, logger: .silent())
        #expect(try namespaces.existing() == [])
    }
}
