import LarderSupport
import Foundation
@testable import LarderDiskStore
@testable import LarderStorage
@testable import LarderValueFile
import LarderTestSupport
import Testing
import LarderStoreVocabulary

/// The store's running totals (`stats`) against what is really on disk:
/// after every kind of change, keys, stored bytes and logical bytes equal a
/// count of the value files, their sizes and their gunzipped lengths (with
/// zlib, not the store's own reader).
@Suite(.blockingLane) struct StoreStatsTests {
    /// Keys, logical and stored bytes of the value files below the current generation.
    static func onDisk(_ t: TempStore) -> StoreStats {
        var truth = StoreStats()
        func walk(_ directory: String) {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
                let path = directory + "/" + name
                var isDirectory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
                if isDirectory.boolValue { walk(path); continue }
                guard case .value = DiskNames.classify(name: Array(name.utf8), isDirectory: false),
                      let data = FileManager.default.contents(atPath: path) else { continue }
                truth.keys += 1
                truth.storedBytes += Int64(data.count)
                truth.logicalBytes += Int64(StoreTestSupport.gunzip(Array(data))?.count ?? 0)
            }
        }
        walk(t.values)
        return truth
    }

    static func expectTotals(_ t: TempStore, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let truth = onDisk(t)
        #expect(t.store.stats == truth, "\(what): stats \(t.store.stats), on disk \(truth)", sourceLocation: sourceLocation)
    }

    @Test func totalsFollowEveryKindOfChange() throws {
        let t = try TempStore()
        #expect(t.store.stats == StoreStats())
        let text = Array(String(repeating: "compressible text ", count: 100).utf8)

        let created = try t.put("s/a", text)
        #expect(t.store.stats.keys == 1)
        #expect(t.store.stats.logicalBytes == Int64(text.count))
        #expect(created.metadata.size == UInt64(text.count))
        Self.expectTotals(t, "a new key")

        try t.put("s/a", Array("short".utf8))
        Self.expectTotals(t, "a replaced key (not cached)")
        _ = try t.read("s/a")  // now in the read cache
        try t.put("s/a", Array(text.prefix(700)))
        Self.expectTotals(t, "a replaced key (cached)")

        try t.put("s/gz", StoreTestSupport.gzip(text, name: "original.txt"), encoding: .gzip)
        #expect(try t.read("s/gz") == text)
        Self.expectTotals(t, "a gzip upload kept as sent")

        try t.put("s/empty", [])
        try t.put("t/x/1", [1, 2, 3])
        try t.put("t/x/2", [4, 5])
        try t.put("t/y", Array(text.prefix(10)))
        Self.expectTotals(t, "more keys, an empty one")

        _ = try t.store.update(try StoreKey("s/json"), condition: nil, maxValueBytes: 1 << 20) { _, _ in
            UpdatedValue(bytes: Array("[1,2,3]".utf8), contentType: "application/json")
        }.get()
        Self.expectTotals(t, "a JSON update")

        #expect(try t.store.delete(try StoreKey("s/empty")).get())
        #expect(try !t.store.delete(try StoreKey("s/empty")).get())
        Self.expectTotals(t, "a delete")

        #expect(try t.store.deletePrefix(try StorePrefix(bytes: Array("t/".utf8))).get() == 3)
        #expect(t.store.stats.keys == 3, "the keys go at once")
        t.store.drainBackgroundWork()  // the bytes when the background delete has measured them
        Self.expectTotals(t, "a prefix delete")

        // A reset before the background delete measured a prefix: the totals stay at zero.
        let other = try TempStore()
        for i in 0..<50 { try other.put("q/\(i)", Array(text.prefix(i * 10))) }
        _ = try other.store.deletePrefix(try StorePrefix(bytes: Array("q/".utf8))).get()
        _ = try other.store.deletePrefix(try StorePrefix(bytes: [])).get()
        other.store.drainBackgroundWork()
        #expect(other.store.stats == StoreStats())
        try other.put("q/again", [1, 2, 3])
        Self.expectTotals(other, "a write after the reset")

        // A value that expires is counted until the sweep removes its file.
        do {  // (an upload holds its store: let it go before the reopen below)
            let expiring = try t.store.beginUpload(key: try StoreKey("s/ttl"), contentType: "t", encoding: .identity,
                                                   expiresNanos: Clock.nowNanos() + 200_000_000, condition: nil)
            try Array("gone soon".utf8).withUnsafeBytes { try expiring.write($0) }
            _ = try expiring.finish().get()
        }
        Self.expectTotals(t, "a value with an expiry")
        let before = t.store.stats.keys
        let deadline = Date().addingTimeInterval(5)
        while t.store.stats.keys == before && Date() < deadline { usleep(20_000) }
        #expect(t.store.stats.keys == before - 1, "the sweep did not take the expired value off the totals")
        Self.expectTotals(t, "after the sweep")

        // A reopened store seeds the same totals from its files.
        let stats = t.store.stats
        t.close()
        let again = try TempStore(directory: t.directory)
        again.store.waitForIndex()  // the totals are seeded by the background scan
        #expect(again.store.stats == stats)
        Self.expectTotals(again, "after a reopen")

        #expect(try again.store.deletePrefix(try StorePrefix(bytes: [])).get() == stats.keys)
        #expect(again.store.stats == StoreStats())
        Self.expectTotals(again, "after a reset")
    }

    @Test func concurrentWritersAndDeletersKeepExactTotals() throws {
        let t = try TempStore()
        let store = t.store!
        let group = DispatchGroup()
        let failures = DiskStoreUnitTests.Failures()
        for w in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    for round in 0..<60 {
                        let key = try StoreKey("c/\((w * 7 + round) % 10)")
                        if round % 5 == 4 {
                            _ = try store.delete(key).get()
                        } else {
                            let upload = try store.beginUpload(key: key, contentType: "t", encoding: .identity)
                            let value = [UInt8](repeating: UInt8(round), count: 100 + w * 1000 + round * 37)
                            try value.withUnsafeBytes { try upload.write($0) }
                            _ = try upload.finish().get()
                        }
                    }
                } catch { failures.add("\(error)") }
            }
        }
        group.wait()
        #expect(failures.all.isEmpty, "\(failures.all)")
        Self.expectTotals(t, "after concurrent writes and deletes")
    }
}
