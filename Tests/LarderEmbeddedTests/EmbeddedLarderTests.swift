import Foundation
@testable import LarderEmbedded
import LarderTestSupport
import LarderWire
import LarderDiskStore
import LarderStorage
import LarderValueFile
import Testing
import LarderStoreVocabulary

/// What only the embedded store does: the same files and lock as the
/// server, sync and async calls, watch and change feed in process. The
/// shared suite (both implementations) covers the common semantics.
@Suite(.asyncLane) struct EmbeddedLarderTests {
    struct Note: Codable, Equatable {
        var title: String
        var count: Int
        var when: Date
    }

    static func directory() -> URL {
        URL(fileURLWithPath: TestServer.makeTempDirectory(), isDirectory: true)
    }

    static func open(_ dir: URL = directory()) throws -> EmbeddedLarder {
        try EmbeddedLarder(directory: dir, fsync: false)
    }

    @Test func codableAndRawDataRoundTrip() async throws {
        let larder = try Self.open()
        defer { larder.close() }
        let note = Note(title: "hello", count: 3, when: Date(timeIntervalSince1970: 1_700_000_000))
        let first = try await larder.save(note, at: "notes/1")
        #expect(first.created)
        #expect(try await larder.fetch(Note.self, at: "notes/1") == note)
        let second = try await larder.save(note, at: "notes/1")
        #expect(!second.created)
        #expect(second.etag != first.etag)

        let bytes = Data([0, 1, 2, 255])
        // The synchronous forms (a sync closure picks them).
        let stored: StoredData = try {
            try larder.save(bytes, at: "blobs/a", contentType: "image/png", condition: .none, ttl: nil)
            return try larder.fetch("blobs/a")
        }()
        #expect(stored.data == bytes)
        #expect(stored.contentType == "image/png")
        #expect(stored.info.size == 4)
        let info: ValueInfo = try await larder.info("blobs/a")
        #expect(info.etag == stored.etag)
        await #expect(throws: LarderError.self) { _ = try await larder.fetch("blobs/missing") as StoredData }
        #expect(throws: LarderError.self) { try larder.save(Data(), at: "bad//key", contentType: "x", condition: .none, ttl: nil) }
    }

    /// The server locks the directory; after `close()` the server reads the
    /// embedded store's files (the same gzip format) over HTTP.
    @Test func sameFilesAndDirectoryLockAsTheServer() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try TestServer(dataDirectory: dir.path)
        do {
            _ = try EmbeddedLarder(directory: dir, fsync: false)
            Issue.record("opened a directory a server holds")
        } catch LarderError.directoryLocked(let path, _) {
            #expect(path.hasSuffix("larder.lock"))
        }
        server.stop(keepData: true)

        let larder = try Self.open(dir)
        let text = String(repeating: "embedded ", count: 500)
        try larder.save(Data(text.utf8), at: "docs/readme", contentType: "text/plain", condition: .none, ttl: nil)
        larder.close()

        let again = try TestServer(dataDirectory: dir.path)
        defer { again.stop() }
        let response = try again.client().get("docs/readme")
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == text)
        #expect(response.header("Content-Type") == "text/plain")
    }

    @Test func preconditions() async throws {
        let larder = try Self.open()
        defer { larder.close() }
        let v1 = try await larder.save(Data("1".utf8), at: "k", contentType: "text/plain", condition: .ifAbsent, ttl: nil)
        await #expect { try await larder.save(Data("x".utf8), at: "k", contentType: "text/plain", condition: .ifAbsent, ttl: nil) }
            throws: { if case LarderError.preconditionFailed(let key) = $0 { key == "k" } else { false } }
        // Either representation's tag names the version, as over HTTP.
        let gzipTag = String(v1.etag.dropLast()) + "-gz\""
        let v2 = try await larder.save(Data("2".utf8), at: "k", contentType: "text/plain", condition: .ifMatch(gzipTag), ttl: nil)
        await #expect(throws: LarderError.self) {
            try await larder.save(Data("3".utf8), at: "k", contentType: "text/plain", condition: .ifMatch(v1.etag), ttl: nil)
        }
        await #expect(throws: LarderError.self) { try await larder.delete("k", condition: .ifMatch(v1.etag)) }
        #expect(try await larder.delete("k", condition: .ifMatch(v2.etag)))
        #expect(try await larder.delete("k", condition: .none) == false)
        // If-Match on an absent key fails, as the server's 412.
        await #expect(throws: LarderError.self) { try await larder.delete("k", condition: .ifMatch(v2.etag)) }
    }

    @Test func appendUniqueAndNotJSON() async throws {
        let larder = try Self.open()
        defer { larder.close() }
        #expect(try await larder.append("a", to: "tags").count == 1)
        #expect(try await larder.append(contentsOf: ["b", "a", "c"], to: "tags", unique: true).count == 3)
        #expect(try await larder.fetch([String].self, at: "tags") == ["a", "b", "c"])
        let result = try await larder.append(json: Data(#"["c","d"]"#.utf8), to: "tags", unique: true, condition: .none)
        #expect(result.count == 4)
        #expect(result.etag == (try await larder.info("tags")).etag)

        try await larder.save(Data("plain".utf8), at: "text", contentType: "text/plain", condition: .none, ttl: nil)
        await #expect { try await larder.append("x", to: "text") }
            throws: { if case LarderError.notJSON = $0 { true } else { false } }
        await #expect { try await larder.append(json: Data("{oops".utf8), to: "tags", unique: false, condition: .none) }
            throws: { if case LarderError.notJSON = $0 { true } else { false } }
    }

    @Test func ttlExpiry() async throws {
        let larder = try Self.open()
        defer { larder.close() }
        let before = Timestamp(Date()).nanoseconds
        try await larder.save(Data("x".utf8), at: "session", ttl: .milliseconds(300))
        let after = Timestamp(Date()).nanoseconds
        // Rounded up to a whole second from the moment of the save. On a
        // loaded machine the read may come after that second: then absent is right.
        if let info = try await larder.fetchIfPresent("session")?.info {
            let expires = try #require(info.expires).nanoseconds
            #expect(expires >= before + 1_000_000_000 - 1_000 && expires <= after + 1_000_000_000 + 1_000)
        } else {
            #expect(Timestamp(Date()).nanoseconds - before >= 1_000_000_000, "session vanished before its second was up")
        }
        try await Task.sleep(for: .milliseconds(1200))
        #expect(try await larder.fetchIfPresent("session") == nil)
        #expect(try await larder.listPage(prefix: "", after: nil, limit: 10, delimiter: false).keys.isEmpty)
    }

    @Test func listingAndBulkDeleteAndCreate() async throws {
        let larder = try Self.open()
        defer { larder.close() }
        for key in ["a/1", "a/2", "a/b/3", "b"] {
            try await larder.save(Data(key.utf8), at: key)
        }
        let page = try await larder.listPage(prefix: "a/", after: nil, limit: 0, delimiter: true)
        #expect(page.keys.map(\.key) == ["a/1"])
        #expect(page.next == "a/1")
        let all = try await larder.listPage(prefix: "a/", after: nil, limit: 100, delimiter: true)
        #expect(all.keys.map(\.key) == ["a/1", "a/2"])
        #expect(all.prefixes == ["a/b/"])
        await #expect(throws: LarderError.self) { try await larder.removeAll(prefix: "a") }
        #expect(try await larder.removeAll(prefix: "a/") == 3)
        let one = try await larder.create(Data("1".utf8), under: "jobs/", contentType: "text/plain", ttl: nil)
        let two = try await larder.create(Data("2".utf8), under: "jobs/", contentType: "text/plain", ttl: nil)
        #expect(one.created && one.key.hasPrefix("jobs/") && one.key < two.key)
        #expect(try await larder.fetch(two.key).data == Data("2".utf8))
    }

    @Test func watchSeesAnotherTasksChanges() async throws {
        let larder = try Self.open()
        defer { larder.close() }
        var states = larder.watch("cfg").makeAsyncIterator()
        #expect(try await states.next() == .absent)
        let writer = Task { try await larder.save(Data("on".utf8), at: "cfg", contentType: "text/plain", condition: .none, ttl: nil) }
        _ = try await writer.value
        #expect(try await states.next()?.value?.data == Data("on".utf8))
        try await larder.removeAll(prefix: "")
        #expect(try await states.next() == .absent)
    }

    @Test func changeFeedOrderAndReplay() async throws {
        let larder = try Self.open()
        defer { larder.close() }
        var feed = try await larder.changes(prefix: "p/").makeAsyncIterator()
        try await larder.save(Data("1".utf8), at: "p/a")
        try await larder.save(Data("x".utf8), at: "q/other")
        try await larder.save(Data("2".utf8), at: "p/b")
        try await larder.delete("p/a")
        var seen: [ChangeEvent] = []
        for _ in 0..<3 { seen.append(try await feed.next()!) }
        #expect(seen.map(\.kind) == [.put, .put, .delete])
        #expect(seen.map(\.data.key) == ["p/a", "p/b", "p/a"])

        var replay = try await larder.changes(prefix: "p/", after: seen[0].id).makeAsyncIterator()
        #expect(try await replay.next()?.id == seen[1].id)
        #expect(try await replay.next()?.id == seen[2].id)
        try await larder.save(Data("3".utf8), at: "p/c")
        #expect(try await replay.next()?.data.key == "p/c")
    }

    @Test func concurrentUpdatesLoseNothing() async throws {
        let larder = try Self.open()
        defer { larder.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<50 {
                        try await larder.update(Int.self, at: "counter", initial: 0) { $0 += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await larder.fetch(Int.self, at: "counter") == 200)
    }

    @Test func closedStoreRefusesAndNamedLocation() throws {
        let base = Self.directory()
        defer { try? FileManager.default.removeItem(at: base) }
        let larder = try EmbeddedLarder(named: "app", in: .directory(base), fsync: false)
        #expect(larder.directory.path.hasSuffix("/app"))
        try larder.save(Data("x".utf8), at: "k", contentType: "text/plain", condition: .none, ttl: nil)
        larder.close()
        #expect(throws: LarderError.self) { _ = try larder.fetch("k") as StoredData }
        let reopened = try EmbeddedLarder(named: "app", in: .directory(base), fsync: false)
        defer { reopened.close() }
        #expect(try reopened.fetch("k").data == Data("x".utf8))
    }
}

/// Regressions from the review: the embedded store throws what the client
/// throws for the server's answer to the same call.
extension EmbeddedLarderTests {
    @Test func storeErrorsMapAsTheServerAnswers() async throws {
        let larder = try Self.open()
        defer { larder.close() }
        let longType = "text/" + String(repeating: "x", count: 1100)
        await #expect { try await larder.save(Data("x".utf8), at: "typed", contentType: longType) } throws: { error in
            if case LarderError.cannotWrite(key: "typed", _) = error { return true } else { return false }
        }
        // A full disk cannot be written; any other I/O failure (a read too)
        // is the server's 500 internal_error.
        let full = LarderError.from(StoreError.io(operation: "write", path: "/x", errno: ENOSPC), key: "k")
        if case LarderError.cannotWrite(key: "k", _) = full {} else { Issue.record("ENOSPC: \(full)") }
        let broken = LarderError.from(StoreError.io(operation: "read", path: "/x", errno: EIO), key: "k")
        if case LarderError.server(500, let body) = broken {
            #expect(body.error == .internalError)
        } else {
            Issue.record("EIO: \(broken)")
        }
        let gzip = LarderError.from(StoreError.invalidGzip("truncated"), key: "k")
        if case LarderError.server(400, let body) = gzip {
            #expect(body.error == .invalidGzip)
        } else {
            Issue.record("invalid gzip: \(gzip)")
        }
    }
}

extension EmbeddedLarderTests {
    /// A feed nobody reads does not grow forever: past its buffer it ends
    /// with 503 busy naming the last event delivered, and resuming after
    /// that id misses nothing.
    @Test func unreadChangeFeedEndsAndResumes() async throws {
        let larder = try EmbeddedLarder(directory: Self.directory(), fsync: false, coder: .default, feedBuffer: 3)
        defer { larder.close() }
        var events = try await larder.changes(prefix: "f/").makeAsyncIterator()
        for n in 0..<6 { try await larder.save(Data("\(n)".utf8), at: "f/\(n)") }
        var seen: [ChangeEvent] = []
        var ending: (any Error)?
        do {
            while let event = try await events.next() { seen.append(event) }
        } catch {
            ending = error
        }
        #expect(seen.map(\.key) == ["f/0", "f/1", "f/2"])
        guard case LarderError.server(503, let body)? = ending as? LarderError else {
            Issue.record("ended with \(String(describing: ending))")
            return
        }
        #expect(body.error == .busy)
        #expect(body.message.hasSuffix("after: \(seen[2].id)"))
        var resumed = try await larder.changes(prefix: "f/", after: seen[2].id).makeAsyncIterator()
        var rest: [String?] = []
        for _ in 0..<3 { rest.append(try await resumed.next()?.key) }
        #expect(rest == ["f/3", "f/4", "f/5"])
    }

    /// A larder only the stream keeps stays open until the stream ends,
    /// then closes (its directory lock goes).
    @Test func streamsKeepTheirLarderOpen() async throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try {
            let larder = try Self.open(dir)
            try larder.save(Data("v".utf8), at: "k", contentType: "text/plain", condition: .none, ttl: nil)
            larder.close()
        }()
        do {
            var states = try Self.open(dir).watch("k").makeAsyncIterator()
            #expect(try await states.next()?.value?.data == Data("v".utf8))
        }
        // The watch ended with its iterator: the larder closed and let go.
        try Self.open(dir).close()
        do {
            let events = try await Self.open(dir).changes(prefix: "")
            // Still open: the feed waits rather than ending at once.
            let ended = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    var iterator = events.makeAsyncIterator()
                    return try await iterator.next() == nil
                }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(300))
                    return false
                }
                defer { group.cancelAll() }
                return try await group.next() ?? true
            }
            #expect(!ended)
        }
        try Self.open(dir).close()
    }
}
