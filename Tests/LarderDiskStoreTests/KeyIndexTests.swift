import Dispatch
import Foundation
import LarderSupport
@testable import LarderDiskStore
@testable import LarderStorage
@testable import LarderValueFile
import LarderTestSupport
import Synchronization
import Testing
import LarderStoreVocabulary

/// The key index behind listings and the background start-up scan, on a
/// real store in a temp directory: the index must list exactly what the
/// directory walk lists, and no write or delete during the scan may be
/// lost or undone by it.
@Suite(.blockingLane) struct KeyIndexTests {
    static func put(_ store: DiskStore, _ key: String, _ bytes: [UInt8], type: String = "application/octet-stream",
                    expires: Int64? = nil) throws {
        let upload = try store.beginUpload(key: try StoreKey(key), contentType: type, encoding: .identity,
                                           expiresNanos: expires, condition: nil)
        try bytes.withUnsafeBytes { try upload.write($0) }
        _ = try upload.finish().get()
    }

    /// Every page of a listing, following `next`.
    static func pages(_ list: (String?) throws -> StoreListing) throws -> [StoreListing] {
        var result: [StoreListing] = []
        var after: String? = nil
        repeat {
            let page = try list(after)
            result.append(page)
            after = page.next
        } while after != nil && result.count < 10_000
        return result
    }

    static func describe(_ l: StoreListing) -> String {
        l.values.map { v in
            "\(v.key)|\(v.metadata.size)|\(v.storedSize)|\(v.metadata.version)|\(v.metadata.modifiedNanos)|"
                + "\(v.metadata.expiresNanos ?? 0)|\(v.metadata.contentType)"
        }.joined(separator: ",") + " P:" + l.prefixes.joined(separator: ",") + " N:" + (l.next ?? "-")
    }

    /// Keys of many shapes: flat, nested, 255-byte segments (hashed
    /// directories), bytes around '/', non-ASCII.
    static func randomKeys(_ rng: inout SeededGenerator, count: Int) -> [String] {
        let long = String(repeating: "L", count: 255)
        let pieces = ["a", "b", "a-b", "a.b", "a0", "ab", "z", "é", "日本", "x y", "0", "9", long, String(repeating: "m", count: 254)]
        var keys = Set<String>()
        while keys.count < count {
            let depth = 1 + rng.below(4)
            var segments: [String] = []
            for _ in 0..<depth {
                let piece = pieces[rng.below(pieces.count)]
                segments.append(piece + (piece.utf8.count < 250 && rng.below(3) == 0 ? "\(rng.below(50))" : ""))
            }
            let key = segments.joined(separator: "/")
            if key.utf8.count <= StoreKey.maxKeyBytes { keys.insert(key) }
        }
        return Array(keys)
    }

    @Test func indexListingEqualsTheDirectoryListing() throws {
        let t = try TempStore()
        let store = t.store!
        store.waitForIndex()
        var rng = SeededGenerator(seed: 42)
        let keys = Self.randomKeys(&rng, count: 600)
        let now = Clock.nowNanos()
        let types = ["application/json", "text/plain", "application/octet-stream"]
        for (i, key) in keys.enumerated() {
            // Every fifth expires in an hour: listed now, hidden two hours from now.
            try Self.put(store, key, Array(repeating: UInt8(i & 0xFF), count: rng.below(300)), type: types[i % 3],
                         expires: i % 5 == 0 ? now + 3_600_000_000_000 : nil)
        }
        // Some deletes, and a prefix delete.
        for key in keys.prefix(40) { _ = try store.delete(try StoreKey(key)).get() }
        _ = try store.deletePrefix(try StorePrefix(bytes: Array("b/".utf8))).get()
        #expect(store.isIndexReady)

        var prefixes = Set<String>([""])
        for key in keys {
            var parts = key.split(separator: "/", omittingEmptySubsequences: false).dropLast()
            while !parts.isEmpty { prefixes.insert(parts.joined(separator: "/") + "/"); parts.removeLast() }
        }
        let prefixList = prefixes.sorted()
        let cursors = keys + prefixList + ["", "a", "a/", "a0", "b", "zz", "\u{FFFF}"]
        for round in 0..<400 {
            let prefixText = round < prefixList.count ? prefixList[round] : prefixList[rng.below(prefixList.count)]
            let prefix = try StorePrefix(bytes: Array(prefixText.utf8))
            let after: String? = rng.below(3) == 0 ? nil : cursors[rng.below(cursors.count)]
            let limit = 1 + rng.below(rng.below(2) == 0 ? 5 : 80)
            let group = rng.below(2) == 0
            let at = rng.below(4) == 0 ? now + 7_200_000_000_000 : Clock.nowNanos()
            let fromIndex = store.index.list(prefix: Array(prefix.string.utf8), after: after.map { Array($0.utf8) },
                                             limit: limit, groupByDirectory: group, nowNanos: at)
            let fromDisk = try store.listDirectories(prefix: prefix, after: after, limit: limit, groupByDirectory: group, nowNanos: at)
            #expect(Self.describe(fromIndex) == Self.describe(fromDisk),
                    "prefix \(prefixText) after \(after ?? "nil") limit \(limit) group \(group)")
        }
        // Whole listings, paged, through the public call (the index) and the walk.
        for group in [false, true] {
            for prefixText in ["", "a/", prefixList.last!] {
                let prefix = try StorePrefix(bytes: Array(prefixText.utf8))
                let a = try Self.pages { try store.list(prefix: prefix, after: $0, limit: 7, groupByDirectory: group).get() }
                let b = try Self.pages { try store.listDirectories(prefix: prefix, after: $0, limit: 7, groupByDirectory: group) }
                #expect(a.map(Self.describe) == b.map(Self.describe))
            }
        }
        let all = try store.list(prefix: .root, after: nil, limit: 10_000, groupByDirectory: false).get()
        #expect(all.values.count > 400)
        #expect(all.values.map(\.key) == store.index.allKeys)
    }

    /// Fills a store with `count` keys (`d/<n>` for every tenth, else
    /// `k/<n % 40>/<n>`) and closes it; returns each key's value size.
    @discardableResult
    static func fill(_ directory: String, count: Int) throws -> [String: Int] {
        let store = try DiskStore(options: DiskStoreOptions(dataDirectory: directory, fsync: false))
        store.waitForIndex()
        let workers = 4
        DispatchQueue.concurrentPerform(iterations: workers) { w in
            for i in stride(from: w, to: count, by: workers) {
                try! put(store, key(i), Array("value \(i)".utf8))
            }
        }
        store.close()
        var model: [String: Int] = [:]
        for i in 0..<count { model[key(i)] = "value \(i)".utf8.count }
        return model
    }

    static func key(_ i: Int) -> String { i % 10 == 0 ? "d/\(i)" : "k/\(i % 40)/\(i)" }

    @Test func storeOnTwentyThousandKeysServesBeforeItsScanEnds() throws {
        let directory = NSTemporaryDirectory() + "larder-index-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.fill(directory, count: 20_000)
        let store = try DiskStore(options: DiskStoreOptions(dataDirectory: directory, fsync: false))
        defer { store.close() }
        // init does not read 20,000 headers: the scan is still running.
        #expect(!store.isIndexReady)
        let value = try store.open(try StoreKey(Self.key(12345))).get()
        #expect(try value.identityBytes() == Array("value 12345".utf8))
        value.close()
        // Listing meanwhile: from the directories, complete and correct.
        let page = try store.list(prefix: try StorePrefix(bytes: Array("d/".utf8)), after: nil, limit: 5, groupByDirectory: false).get()
        #expect(page.values.map(\.key) == ["d/0", "d/10", "d/100", "d/1000", "d/10000"])
        // Read-your-writes during the scan.
        try Self.put(store, "k/new", [1, 2, 3])
        let mine = try store.list(prefix: try StorePrefix(bytes: Array("k/".utf8)), after: "k/ne", limit: 1, groupByDirectory: false).get()
        #expect(mine.values.map(\.key) == ["k/new"])
        store.waitForIndex()
        #expect(store.isIndexReady)
        #expect(store.stats.keys == 20_001)
        #expect(store.index.totals.keys == 20_001)
        let after = try store.list(prefix: try StorePrefix(bytes: Array("k/".utf8)), after: "k/ne", limit: 1, groupByDirectory: false).get()
        #expect(after.values.map(\.key) == ["k/new"])
        let groups = try store.list(prefix: try StorePrefix(bytes: Array("k/".utf8)), after: nil, limit: 100, groupByDirectory: true).get()
        #expect(groups.prefixes.count == 36 && groups.values.map(\.key) == ["k/new"])
    }

    /// Writes, deletes, prefix deletes and overwrites while the scan holds
    /// headers it has read but not yet added: none of them is undone.
    /// A start-up walk that throws is tried again: the index leaves build
    /// mode once a walk completes, with exact totals and listings, and the
    /// writes made while it was failing are all there.
    @Test func aScanThatThrowsIsTriedAgainUntilTheIndexIsReady() throws {
        let directory = NSTemporaryDirectory() + "larder-index-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try Self.fill(directory, count: 2_000)
        var options = DiskStoreOptions(dataDirectory: directory, fsync: false)
        let attempts = Atomic<Int>(0)
        options.scanWalkHook = { attempt in
            attempts.add(1, ordering: .relaxed)
            if attempt < 2 { throw StoreError.io(operation: "opendir", path: directory, errno: EMFILE) }
        }
        let store = try DiskStore(options: options)
        defer { store.close() }
        store.waitForIndex()
        #expect(!store.isIndexReady)
        // Written and deleted while the scan fails and waits to try again.
        try Self.put(store, "k/new", [1, 2, 3])
        #expect(try store.delete(try StoreKey(Self.key(10)), condition: nil).get())
        let deadline = Date().addingTimeInterval(20)
        while !store.isIndexReady && Date() < deadline { usleep(10_000) }
        #expect(store.isIndexReady)
        store.waitForIndex()  // the walk that completed sets the totals just after the index is ready
        #expect(attempts.load(ordering: .relaxed) == 3)
        #expect(store.stats.keys == 2_000)
        #expect(store.index.totals.keys == 2_000)
        let page = try store.list(prefix: try StorePrefix(bytes: Array("d/".utf8)), after: nil, limit: 3, groupByDirectory: false).get()
        #expect(page.values.map(\.key) == ["d/0", "d/100", "d/1000"])
        let mine = try store.list(prefix: try StorePrefix(bytes: Array("k/".utf8)), after: "k/ne", limit: 1, groupByDirectory: false).get()
        #expect(mine.values.map(\.key) == ["k/new"])
    }

    @Test func changesDuringTheScanAreNotLostOrResurrected() throws {
        let directory = NSTemporaryDirectory() + "larder-index-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var model = try Self.fill(directory, count: 3_000)
        let gate = DispatchSemaphore(value: 0)
        let firstBatch = Locked<[String]?>(nil)
        let reached = DispatchSemaphore(value: 0)
        var options = DiskStoreOptions(dataDirectory: directory, fsync: false)
        options.scanBatchHook = { keys in
            let first = firstBatch.withLock { seen -> Bool in
                if seen != nil { return false }
                seen = keys
                return true
            }
            if first { reached.signal(); gate.wait() }
        }
        let store = try DiskStore(options: options)
        defer { store.close() }
        reached.wait()
        #expect(!store.isIndexReady)
        let held = firstBatch.withLock { $0 }!
        #expect(held.count == 256)
        // Deleted while their headers wait to be added.
        for key in held[0..<5] {
            #expect(try store.delete(try StoreKey(key)).get())
            model[key] = nil
        }
        // Rewritten: the new value must win.
        for key in held[5..<10] {
            try Self.put(store, key, Array("rewritten".utf8), type: "text/plain")
            model[key] = 9
        }
        // Deleted and written again.
        #expect(try store.delete(try StoreKey(held[10])).get())
        try Self.put(store, held[10], Array("reborn".utf8))
        model[held[10]] = 6
        // The directory of a held key (held, maybe not all read), and another.
        let heldDirectory = String(held[20][...held[20].lastIndex(of: "/")!])
        for text in [heldDirectory, heldDirectory == "d/" ? "k/3/" : "d/"] {
            let gone = model.keys.filter { $0.hasPrefix(text) }
            #expect(try store.deletePrefix(try StorePrefix(bytes: Array(text.utf8))).get() == gone.count, "\(text)")
            for key in gone { model[key] = nil }
        }
        // Written under a deleted prefix, and new keys.
        try Self.put(store, heldDirectory + "after", Array("after".utf8))
        model[heldDirectory + "after"] = 5
        try Self.put(store, "n/1", [1])
        model["n/1"] = 1
        #expect(!store.isIndexReady)
        gate.signal()
        store.waitForIndex()
        #expect(store.isIndexReady)

        let listed = try store.list(prefix: .root, after: nil, limit: 10_000, groupByDirectory: false).get()
        let disk = try store.listDirectories(prefix: .root, after: nil, limit: 10_000, groupByDirectory: false)
        #expect(Self.describe(listed) == Self.describe(disk))
        var seen: [String: Int] = [:]
        for v in listed.values { seen[v.key] = Int(v.metadata.size) }
        #expect(seen == model)
        for key in held[0..<5] { #expect(seen[key] == nil, "\(key) came back") }
        #expect(store.stats.keys == model.count)
        #expect(store.index.totals.keys == model.count)
    }

    @Test func aResetDuringTheScanLeavesOnlyLaterWrites() throws {
        let directory = NSTemporaryDirectory() + "larder-index-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try Self.fill(directory, count: 2_000)
        let gate = DispatchSemaphore(value: 0)
        let reached = DispatchSemaphore(value: 0)
        let calls = Atomic<Int>(0)
        var options = DiskStoreOptions(dataDirectory: directory, fsync: false)
        options.scanBatchHook = { _ in
            if calls.add(1, ordering: .relaxed).newValue == 1 { reached.signal(); gate.wait() }
        }
        let store = try DiskStore(options: options)
        defer { store.close() }
        reached.wait()
        // The count is every value, though the scan has not reached them all.
        #expect(try store.deletePrefix(.root).get() == 2_000)
        try Self.put(store, "k/after-reset", [7])
        // A reset leaves an empty, complete index: listings use it at once.
        #expect(store.isIndexReady)
        gate.signal()
        store.waitForIndex()
        let listed = try store.list(prefix: .root, after: nil, limit: 10_000, groupByDirectory: false).get()
        #expect(listed.values.map(\.key) == ["k/after-reset"])
        #expect(store.stats.keys == 1)
        #expect(calls.load(ordering: .relaxed) == 1, "the scan went on after the reset")
    }

    @Test func indexCostPerKey() throws {
        let index = KeyIndex()
        var rng = SeededGenerator(seed: 7)
        var batch: [(key: [UInt8], meta: ValueMetadata, stored: Int64)] = []
        for i in 0..<100_000 {
            let key = "p/" + String(rng.next() % 10_000_000) + "-\(i)"
            batch.append((Array(key.utf8), ValueMetadata(key: key, contentType: "application/json", size: 1024, version: UInt64(i),
                                                         modifiedNanos: 1, expiresNanos: nil), 600))
            if batch.count == 256 { index.addScanned(batch) { _, _ in }; batch.removeAll() }
        }
        index.addScanned(batch) { _, _ in }
        let keyBytes = index.allKeys.reduce(0) { $0 + $1.utf8.count }
        let building = index.approximateBytes
        index.finishBuild()
        let packed = index.approximateBytes
        #expect(index.totals.keys == 100_000)
        // Fixed cost per key beyond its own bytes: the entry (48) and its end offset (4), plus block overhead.
        let perKey = Double(packed - keyBytes) / 100_000
        print("key index: \(packed) bytes for 100,000 keys (\(keyBytes) of key bytes): \(perKey) bytes per key beyond the key; \(building) while building")
        #expect(perKey < 60)
        let keys = index.allKeys
        #expect(keys == keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
    }

    /// A client writing a new Content-Type every time cannot grow the
    /// index's table of types without bound; the types in use survive.
    @Test func unusedContentTypesAreDropped() throws {
        let index = KeyIndex()
        index.finishBuild()
        func meta(_ key: String, _ type: String, _ version: UInt64) -> ValueMetadata {
            ValueMetadata(key: key, contentType: type, size: 1, version: version, modifiedNanos: 1, expiresNanos: nil)
        }
        index.set(Array("keep/a".utf8), meta("keep/a", "application/json", 1), stored: 30)
        index.set(Array("keep/b".utf8), meta("keep/b", "text/plain", 2), stored: 30)
        for i in 0..<10_000 {
            index.set(Array("churn".utf8), meta("churn", "application/x-type-\(i)", UInt64(10 + i)), stored: 30)
        }
        #expect(index.internedTypeCount <= KeyIndex.initialTypeLimit, "\(index.internedTypeCount) types interned")
        let page = index.list(prefix: [], after: nil, limit: 10, groupByDirectory: false, nowNanos: 0)
        let types = Dictionary(uniqueKeysWithValues: page.values.map { ($0.key, $0.info.contentType) })
        #expect(types == ["churn": "application/x-type-9999", "keep/a": "application/json", "keep/b": "text/plain"])
    }
}
