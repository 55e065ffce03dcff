import Foundation
@testable import LarderDiskStore
@testable import LarderStorage
@testable import LarderValueFile
import LarderTestSupport
import Testing
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// The disk store's all-or-nothing restore (`DiskRestore`): nothing is
/// visible while values are staged, the commit publishes all of them in
/// one step, and a stop at any point leaves the old set or the new one
/// once the store opens again (the crash states are made here by stopping
/// between the commit's steps; `Tests/crash/crash_harness.py --restore`
/// kills the real binary mid-restore).
@Suite(.blockingLane) struct DiskRestoreTests {
    static func stage(_ restore: any RestoreTransaction, _ values: [(String, String)]) throws {
        for (key, text) in values {
            let writer = try restore.stage(key: try StoreKey(key), contentType: "text/plain", expiresNanos: nil)
            try Array(text.utf8).withUnsafeBytes { try writer.write($0) }
            _ = try writer.finish().get()
        }
    }

    static func seeded(_ store: TempStore) throws {
        for i in 0..<5 { try store.put("r/old\(i)", Array("old \(i)".utf8)) }
        try store.put("other/k", Array("untouched".utf8))
    }

    /// The old set seeded, then a restore under `r/` with the new values
    /// staged, not committed.
    static func stagedUnderR(_ store: TempStore, replace: Bool) throws -> DiskRestore {
        try seeded(store)
        let restore = try store.store.beginRestore(under: try StorePrefix(bytes: Array("r/".utf8)), replace: replace) as! DiskRestore
        try stage(restore, newValues)
        return restore
    }

    /// The store lets go of its directory as a stopped process would (the
    /// restore in the test still holds the store object).
    static func stop(_ store: TempStore) {
        store.store.close()
        store.close()
    }

    static let newValues = (0..<4).map { ("r/new\($0)", "new \($0)") } + [("r/deep/er/key", "deep")]

    static func expectNewSet(_ store: TempStore, replaced: Bool = true) throws {
        let keys = try store.keys(prefix: "r/")
        let expected = Self.newValues.map(\.0) + (replaced ? [] : (0..<5).map { "r/old\($0)" })
        #expect(keys == expected.sorted(), "keys: \(keys)")
        for (key, text) in Self.newValues { #expect(try store.read(key) == Array(text.utf8), "\(key)") }
        #expect(try store.read("other/k") == Array("untouched".utf8))
    }

    static func expectOldSet(_ store: TempStore) throws {
        #expect(try store.keys(prefix: "r/") == (0..<5).map { "r/old\($0)" })
        for i in 0..<5 { #expect(try store.read("r/old\(i)") == Array("old \(i)".utf8)) }
        #expect(try store.read("other/k") == Array("untouched".utf8))
    }

    @Test func nothingIsVisibleUntilTheCommitThenAllOfIt() throws {
        let store = try TempStore()
        try Self.seeded(store)
        store.store.waitForIndex()
        let restore = try store.store.beginRestore(under: try StorePrefix(bytes: Array("r/".utf8)), replace: true)
        try Self.stage(restore, Self.newValues)
        try Self.expectOldSet(store)
        #expect(try restore.commit().get() == Self.newValues.count)
        try Self.expectNewSet(store)
        #expect(store.store.stats.keys == Self.newValues.count + 1, "totals: \(store.store.stats)")
        store.store.drainBackgroundWork()
        #expect((try POSIX.directoryEntries(store.directory + "/restore"))?.isEmpty ?? true, "the restore left its directory")
    }

    @Test func aMergeKeepsWhatItDoesNotName() throws {
        let store = try TempStore()
        let restore = try Self.stagedUnderR(store, replace: false)
        _ = try restore.commit().get()
        try Self.expectNewSet(store, replaced: false)
    }

    @Test func aReplaceOfEverythingAdoptsTheStagedTreeAsAGeneration() throws {
        let store = try TempStore()
        try Self.seeded(store)
        let restore = try store.store.beginRestore(under: .root, replace: true)
        try Self.stage(restore, [("a", "1"), ("b/c", "2")])
        _ = try restore.commit().get()
        #expect(try store.keys() == ["a", "b/c"])
        Self.stop(store)
        let reopened = try TempStore(directory: store.directory)
        #expect(try reopened.keys() == ["a", "b/c"])
    }

    @Test func anAbortedRestoreChangesNothing() throws {
        let store = try TempStore()
        let restore = try Self.stagedUnderR(store, replace: true)
        restore.abort()
        try Self.expectOldSet(store)
    }

    // MARK: - Stops between the commit's steps

    /// Staged, no intent: the restore never reached its commit point.
    @Test func aStopBeforeTheIntentKeepsTheOldSet() throws {
        let store = try TempStore()
        let restore = try Self.stagedUnderR(store, replace: true)
        let directory = restore.directory
        Self.stop(store)  // nothing of the restore is published
        let reopened = try TempStore(directory: store.directory)
        try Self.expectOldSet(reopened)
        #expect(try POSIX.lstatIfExists(directory) == nil, "the unpublished staging was left behind")
        withExtendedLifetime(restore) {}
    }

    /// The intent is on disk, nothing published: start-up finishes it.
    @Test(arguments: [true, false])
    func aStopAfterTheIntentIsRolledForward(replace: Bool) throws {
        let store = try TempStore()
        let restore = try Self.stagedUnderR(store, replace: replace)
        _ = try store.store.writeRestoreIntent(for: restore)
        Self.stop(store)
        let reopened = try TempStore(directory: store.directory)
        reopened.store.waitForIndex()
        try Self.expectNewSet(reopened, replaced: replace)
        #expect(reopened.store.stats.keys == Self.newValues.count + 1 + (replace ? 0 : 5))
    }

    /// A replace stopped between its two renames: the prefix's directory is
    /// in the trash and the staged one not yet in its place.
    @Test func aStopBetweenTheRenamesOfAReplaceIsRolledForward() throws {
        let store = try TempStore()
        let restore = try Self.stagedUnderR(store, replace: true)
        _ = try store.store.writeRestoreIntent(for: restore)
        try FileManager.default.createDirectory(atPath: store.directory + "/trash", withIntermediateDirectories: true)
        let live = URL(fileURLWithPath: store.values).resolvingSymlinksInPath().path + "/"
            + DiskNames.relativePath(of: try StorePrefix(bytes: Array("r/".utf8)))
        #expect(rename(live, store.directory + "/trash/r-half-done") == 0)
        Self.stop(store)
        let reopened = try TempStore(directory: store.directory)
        try Self.expectNewSet(reopened)
    }

    /// A merge stopped half-way through its renames.
    @Test func aStopHalfWayThroughAMergeIsRolledForward() throws {
        let store = try TempStore()
        let restore = try Self.stagedUnderR(store, replace: false)
        _ = try store.store.writeRestoreIntent(for: restore)
        // Two of the staged files reached their place before the stop.
        let root = URL(fileURLWithPath: store.values).resolvingSymlinksInPath().path
        for (key, _) in Self.newValues.prefix(2) {
            let relative = DiskNames.relativePath(of: try StoreKey(key))
            #expect(rename(restore.tree + "/" + relative, root + "/" + relative) == 0)
        }
        Self.stop(store)
        let reopened = try TempStore(directory: store.directory)
        try Self.expectNewSet(reopened, replaced: false)
    }

    /// A replace of everything stopped after the tree became a generation
    /// but before `values` pointed at it: not taken for a leftover.
    @Test func aStopBeforeTheGenerationSwitchIsRolledForward() throws {
        let store = try TempStore()
        try Self.seeded(store)
        let restore = try store.store.beginRestore(under: .root, replace: true) as! DiskRestore
        try Self.stage(restore, [("a", "1")])
        let intent = try store.store.writeRestoreIntent(for: restore)
        let number = try #require(intent.generation)
        #expect(rename(restore.tree, store.directory + "/gen-\(number)") == 0)
        Self.stop(store)
        let reopened = try TempStore(directory: store.directory)
        #expect(try reopened.keys() == ["a"])
        #expect(try reopened.read("a") == Array("1".utf8))
    }
}
