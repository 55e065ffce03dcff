import CZlib
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

/// A real DiskStore on a fresh temp directory.
final class TempStore {
    let directory: String
    private(set) var store: DiskStore!

    init(directory: String? = nil) throws {
        self.directory = directory ?? NSTemporaryDirectory() + "larder-unit-" + UUID().uuidString
        store = try DiskStore(options: DiskStoreOptions(dataDirectory: self.directory, fsync: false))
    }

    /// Drops the store (and its lock) so another can open the directory.
    func close() {
        store?.drainBackgroundWork()
        store = nil
    }

    func remove() {
        close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { remove() }

    var values: String { directory + "/values" }

    @discardableResult
    func put(_ key: String, _ bytes: [UInt8], type: String = "application/octet-stream",
             encoding: ValueUpload.Encoding = .identity, pieces: Int = 1, expected: Int64? = nil) throws -> PutOutcome {
        let upload = try store.beginUpload(key: try StoreKey(key), contentType: type, encoding: encoding)
        if let expected { try upload.expect(bytes: expected) }
        let size = max(1, (bytes.count + pieces - 1) / pieces)
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + size)
            try bytes[offset..<end].withUnsafeBytes { try upload.write($0) }
            offset = end
        }
        return try upload.finish().get()
    }

    func read(_ key: String) throws -> [UInt8] {
        let value = try store.open(try StoreKey(key)).get()
        if let bytes = try value.identityBytes() { return bytes }
        return try drain(try value.identityStream())
    }

    func readGzip(_ key: String) throws -> [UInt8] {
        let value = try store.open(try StoreKey(key)).get()
        if let bytes = value.gzipBytes() { return bytes }
        return try drain(value.gzipStream())
    }

    func drain(_ stream: ValueByteStream) throws -> [UInt8] {
        defer { stream.close() }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) }
            if n == 0 { return out }
            out += buffer[0..<n]
        }
    }

    func keys(prefix: String = "", limit: Int = 10_000) throws -> [String] {
        let p = try StorePrefix(bytes: Array(prefix.utf8))
        return try store.list(prefix: p, after: nil, limit: limit, groupByDirectory: false).get().values.map(\.key)
    }
}

enum UnitSupport {
    static func files(under link: String) -> [String] {
        let root = URL(fileURLWithPath: link).resolvingSymlinksInPath().path
        return (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []).filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/" + $0, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
    }
}

@Suite(.blockingLane) struct DiskNamesUnitTests {
    @Test func namesOnDisk() throws {
        #expect(DiskNames.relativePath(of: try StoreKey("a")) == "a")
        #expect(DiskNames.relativePath(of: try StoreKey("a/b")) == "a\\/b")
        #expect(DiskNames.relativePath(of: try StoreKey("a/b/c")) == "a\\/b\\/c")
        #expect(DiskNames.directoryName("users") == "users\\")
        let s254 = String(repeating: "s", count: 254)
        #expect(DiskNames.directoryName(s254) == s254 + "\\")
        #expect(DiskNames.directoryName(s254).utf8.count == 255)
        let s255 = String(repeating: "s", count: 255)
        let hashed = DiskNames.directoryName(s255)
        #expect(hashed.hasPrefix("\\h"))
        #expect(hashed.utf8.count <= 255)
        #expect(DiskNames.isHashedDirectory(s255) && !DiskNames.isHashedDirectory(s254))
        #expect(DiskNames.directoryName(String(repeating: "t", count: 255)) != hashed)
        // Every other segment has a distinct name; the file and directory of one segment differ.
        #expect(DiskNames.relativePath(of: try StoreKey("a")) != DiskNames.directoryName("a"))
        #expect(DiskNames.relativePath(of: try StorePrefix(bytes: Array("a/b/".utf8))) == "a\\/b\\")
    }

    @Test func classify() {
        func kind(_ name: String, dir: Bool) -> String {
            switch DiskNames.classify(name: Array(name.utf8), isDirectory: dir) {
            case .value(let s): return "value:" + String(decoding: s, as: UTF8.self)
            case .directory(let s): return "dir:" + (s.map { String(decoding: $0, as: UTF8.self) } ?? "hashed")
            case .temp: return "temp"
            case .other: return "other"
            }
        }
        #expect(kind("a", dir: false) == "value:a")
        #expect(kind("a\\", dir: true) == "dir:a")
        #expect(kind("\\h0123", dir: true) == "dir:hashed")
        #expect(kind("\\tDEADBEEF", dir: false) == "temp")
        #expect(kind("\\name", dir: false) == "other")
        #expect(kind("\\", dir: true) == "other")
        #expect(kind("a\\b\\", dir: true) == "other")
        #expect(kind("plain", dir: true) == "other")
    }
}

@Suite(.blockingLane) struct DiskStoreUnitTests {
    @Test func writeReadReplaceDelete() throws {
        let t = try TempStore()
        let first = try t.put("a/b", Array("one".utf8), type: "text/plain")
        #expect(first.created)
        #expect(first.metadata.size == 3)
        #expect(first.metadata.key == "a/b")
        let second = try t.put("a/b", Array("two!".utf8), type: "text/x")
        #expect(!second.created)
        #expect(second.metadata.version > first.metadata.version)
        #expect(second.metadata.etag != first.metadata.etag)
        #expect(second.metadata.gzipETag == String(second.metadata.etag.dropLast()) + "-gz\"")
        #expect(try t.read("a/b") == Array("two!".utf8))
        let value = try t.store.open(try StoreKey("a/b")).get()
        #expect(value.metadata.contentType == "text/x")
        #expect(value.metadata.size == 4)
        value.close()
        #expect(t.store.stats.keys == 1)
        #expect(try t.store.delete(try StoreKey("a/b")).get())
        #expect(try !t.store.delete(try StoreKey("a/b")).get())
        #expect(throws: StoreError.notFound) { try t.store.open(try StoreKey("a/b")).get() }
        #expect(t.store.stats.keys == 0)
        // The emptied directory is pruned.
        #expect(!FileManager.default.fileExists(atPath: t.values + "/a\\"))
    }

    @Test func fileOnDiskIsGzipWithMetadata() throws {
        let t = try TempStore()
        let value = [UInt8](0...255) + Array(String(repeating: "abc", count: 10_000).utf8)
        try t.put("dir/key", value, type: "application/x-unit", pieces: 7)
        let file = try #require(FileManager.default.contents(atPath: t.values + "/dir\\/key").map(Array.init))
        #expect(StoreTestSupport.gunzip(file) == value)
        guard case .complete(let meta, _) = try file.withUnsafeBytes({ try ValueFileHeader.parse($0, path: "f") }) else {
            Issue.record("header incomplete"); return
        }
        #expect(meta.key == "dir/key")
        #expect(meta.contentType == "application/x-unit")
        #expect(meta.size == UInt64(value.count))
        #expect(try t.readGzip("dir/key") == file)
    }

    @Test func largeValueStreams() throws {
        let t = try TempStore()
        var value = [UInt8](repeating: 0, count: 3 << 20)
        var x: UInt32 = 1
        for i in stride(from: 0, to: value.count, by: 4) { x = x &* 1_664_525 &+ 1_013_904_223; value[i] = UInt8(x >> 28) }
        try t.put("big", value, pieces: 13)
        let opened = try t.store.open(try StoreKey("big")).get()
        #expect(try opened.identityBytes() == nil, "3 MiB is streamed, not loaded")
        #expect(try t.drain(try opened.identityStream()) == value)
        let gz = try t.readGzip("big")
        #expect(StoreTestSupport.gunzip(gz) == value)
    }

    @Test func gzipUploadKeepsClientBytes() throws {
        let t = try TempStore()
        let value = Array(String(repeating: "gz ", count: 50_000).utf8)
        let gz = StoreTestSupport.gzip(value, name: "client.txt")
        let outcome = try t.put("g", gz, encoding: .gzip, pieces: 11)
        #expect(outcome.metadata.size == UInt64(value.count))
        #expect(outcome.metadata.originalGzipHeader == Array(gz.prefix(10 + 11)))
        #expect(try t.readGzip("g") == gz)
        #expect(try t.read("g") == value)
        // On disk: our header (FEXTRA), the client's deflate data and trailer.
        let file = try #require(FileManager.default.contents(atPath: t.values + "/g").map(Array.init))
        #expect(file[3] == 0x04)
        #expect(Array(file.suffix(gz.count - 21)) == Array(gz[21...]))
        #expect(StoreTestSupport.gunzip(file) == value)
    }

    @Test func brokenGzipUploadThrowsAndLeavesNothing() throws {
        let t = try TempStore()
        try t.put("k", Array("old".utf8))
        let good = StoreTestSupport.gzip(Array(String(repeating: "z", count: 1000).utf8))
        var badCRC = good; badCRC[badCRC.count - 8] ^= 0xFF
        for body in [Array(good.dropLast(3)), badCRC, good + [1, 2, 3], Array("plain".utf8), []] {
            #expect(throws: StoreError.self) { try t.put("k", body, encoding: .gzip) }
        }
        #expect(try t.read("k") == Array("old".utf8))
        #expect(UnitSupport.files(under: t.values) == ["k"])
        #expect(t.store.stats.keys == 1)
    }

    @Test func abortedUploadLeavesNoTempFile() throws {
        let t = try TempStore()
        let upload = try t.store.beginUpload(key: try StoreKey("x/y"), contentType: "t", encoding: .identity)
        try Array("partial".utf8).withUnsafeBytes { try upload.write($0) }
        #expect(UnitSupport.files(under: t.values).contains { $0.hasPrefix("x\\/\\t") })
        upload.abort()
        #expect(UnitSupport.files(under: t.values).isEmpty)
        #expect(throws: StoreError.notFound) { try t.store.open(try StoreKey("x/y")).get() }
    }

    @Test func invalidContentType() throws {
        let t = try TempStore()
        for type in ["a\nb", "a\u{7F}", String(repeating: "t", count: 1025)] {
            #expect(throws: StoreError.self) {
                _ = try t.store.beginUpload(key: try StoreKey("k"), contentType: type, encoding: .identity)
            }
        }
    }

    @Test func listingAndBulkDeletes() throws {
        let t = try TempStore()
        let keys = ["users", "users/1", "users/10", "users/2", "users/a/b", "users!", "users2/x", "u", "é", "z/" + String(repeating: "L", count: 255) + "/q"]
        for key in keys { try t.put(key, Array(key.utf8)) }
        let sorted = keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        #expect(try t.keys() == sorted)
        #expect(try t.keys(prefix: "users/") == ["users/1", "users/10", "users/2", "users/a/b"])
        let page = try t.store.list(prefix: .root, after: nil, limit: 3, groupByDirectory: false).get()
        #expect(page.values.map(\.key) == Array(sorted.prefix(3)))
        #expect(page.next == sorted[2])
        let grouped = try t.store.list(prefix: .root, after: nil, limit: 100, groupByDirectory: true).get()
        #expect(grouped.prefixes == ["users/", "users2/", "z/"])
        #expect(grouped.values.map(\.key) == ["u", "users", "users!", "é"])
        #expect(try t.store.deletePrefix(try StorePrefix(bytes: Array("users/".utf8))).get() == 4)
        #expect(try t.keys() == sorted.filter { !$0.hasPrefix("users/") })
        #expect(t.store.stats.keys == keys.count - 4)
        #expect(try t.store.deleteAll() == keys.count - 4)
        #expect(try t.keys().isEmpty)
        #expect(t.store.stats.keys == 0)
        try t.put("after", [1])
        #expect(try t.keys() == ["after"])
        t.store.drainBackgroundWork()
        let top = Set(try FileManager.default.contentsOfDirectory(atPath: t.directory))
        #expect(top.filter { $0.hasPrefix("gen-") }.count == 1, "\(top)")
    }

    @Test func reopenCountsValuesRemovesTempsAndLocks() throws {
        let t = try TempStore()
        for i in 0..<25 { try t.put("r/\(i % 3)/\(i)", [UInt8(i)]) }
        // A second store on a locked directory refuses to open.
        #expect {
            _ = try DiskStore(options: DiskStoreOptions(dataDirectory: t.directory, fsync: false))
        } throws: { error in
            guard case StoreError.locked = error else { return false }
            return true
        }
        t.close()
        let stale = [t.values + "/\\tDEADBEEF", t.values + "/r\\/\\t0000000000000001", t.values + "/r\\/1\\/\\tFF"]
        for path in stale { #expect(FileManager.default.createFile(atPath: path, contents: Data([0x1F, 0x8B]))) }
        let again = try TempStore(directory: t.directory)
        // The start-up scan (totals, stale temp files) runs in the background.
        again.store.waitForIndex()
        #expect(again.store.stats.keys == 25)
        for path in stale { #expect(!FileManager.default.fileExists(atPath: path), "\(path)") }
        for i in 0..<25 { #expect(try again.read("r/\(i % 3)/\(i)") == [UInt8(i)]) }
        // Versions keep increasing across the reopen.
        let before = try again.store.open(try StoreKey("r/0/0")).get().metadata.version
        #expect(try again.put("r/0/0", [9]).metadata.version > before)
    }

    @Test func concurrentWritersToOneKey() throws {
        let t = try TempStore()
        let store = t.store!
        let group = DispatchGroup()
        let failures = Failures()
        for w in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    for round in 0..<20 {
                        let value = [UInt8](repeating: UInt8(w), count: 10_000 + round * 997)
                        let upload = try store.beginUpload(key: try StoreKey("same"), contentType: "t", encoding: .identity)
                        try value.withUnsafeBytes { try upload.write($0) }
                        _ = try upload.finish().get()
                    }
                } catch { failures.add("\(error)") }
            }
        }
        group.wait()
        #expect(failures.all.isEmpty, "\(failures.all)")
        let final = try t.read("same")
        #expect(Set(final).count == 1 && (final.count - 10_000) % 997 == 0)
        #expect(store.stats.keys == 1)
        #expect(UnitSupport.files(under: t.values) == ["same"])
    }

    final class Failures: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [String] = []
        func add(_ s: String) { lock.lock(); items.append(s); lock.unlock() }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return items }
    }
}
