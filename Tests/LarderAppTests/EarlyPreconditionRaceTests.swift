import Dispatch
import Foundation
import LarderDiskStore
import LarderStorage
import LarderSupport
import LarderValueFile
import LarderWire
import Testing
import LarderTestSupport
import LarderStoreVocabulary

/// The early check of a conditional write (`PreconditionGate`, on a store
/// that answers later) and the write itself decide once between them: a
/// client that sends its body without waiting for `100 Continue` may have
/// it written before the early answer comes, and then the write's own
/// check at commit is the answer. A 412 must never go out for a write that
/// was applied.
@Suite(.blockingLane) struct EarlyPreconditionRaceTests {
    /// The disk store seen as one that answers later: the metadata the gate
    /// asks for is read at once but handed over only when the write
    /// finishes, so the early answer (now stale) always arrives after the body.
    final class LateMetadataStore: ForwardingStore, @unchecked Sendable {
        let inner: any ValueStore
        init(_ inner: any ValueStore) { self.inner = inner }
        /// Guarded by its lock: the held answer, and whether one was asked for.
        let held = Locked<(answer: (@Sendable () -> Void)?, asked: Bool)>((nil, false))

        func currentMetadata(of key: StoreKey) -> StoreReply<ValueMetadata?> {
            let now = Result { try inner.currentMetadata(of: key).get() }
            let pending = StorePending<ValueMetadata?>()
            held.withLock { $0 = ({ pending.fulfil(now) }, true) }
            return .later(pending)
        }

        func beginUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
                                  expiresNanos: Int64?, condition: WriteCondition?) throws -> ValueWriter {
            let writer = try inner.beginUpload(key: key, contentType: contentType, encoding: encoding,
                                               expiresNanos: expiresNanos, condition: condition)
            return ReleasingWriter(writer) { [held] in held.withLock { $0.answer.take() }?() }
        }
    }

    /// Hands the held metadata answer over when the write finishes, before the write commits.
    final class ReleasingWriter: ValueWriter {
        let inner: ValueWriter
        let release: () -> Void
        init(_ inner: ValueWriter, release: @escaping () -> Void) { (self.inner, self.release) = (inner, release) }
        var key: StoreKey { inner.key }
        func expect(bytes: Int64) throws { try inner.expect(bytes: bytes) }
        func write(_ chunk: UnsafeRawBufferPointer) throws { try inner.write(chunk) }
        func setAttributes(_ attributes: [UInt8]) throws { try inner.setAttributes(attributes) }
        func finish() -> StoreReply<PutOutcome> { release(); return inner.finish() }
        func abort() { inner.abort() }
    }

    @Test func aWriteWhoseBodyCameFirstIsAnsweredByItsCommitNotByAStaleEarlyCheck() throws {
        let late = Locked<LateMetadataStore?>(nil)
        let server = try TestServer(dataDirectory: TestServer.makeTempDirectory()) { setup in
            let options = setup.store
            setup.openStore = { changes, logger in
                let store = LateMetadataStore(try DiskStore(options: options, logger: logger, changes: changes))
                late.withLock { $0 = store }
                return store
            }
        }
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("k", "old").status == 201)
        let store = try #require(late.withLock { $0 })

        // Create-only, while the key exists: the early check reads "exists"...
        let connection = try server.connection(timeout: 10)
        try connection.send("PUT /store/k HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
                            + "If-None-Match: *\r\nExpect: 100-continue\r\n\r\n")
        try Poll.until(30, "the gate asked for the metadata") { store.held.withLock { $0.asked } }
        // ...then the key goes, and the body comes without waiting for 100 Continue.
        #expect(try client.delete("k").status == 204)
        try connection.send("new")
        let response = try connection.readResponse()
        #expect(response.status == 201, "the write was applied, so its answer is the write's: \(response.status) \(response.text)")
        #expect(try client.get("k").text == "new")
    }

    /// The disk store seen as one whose metadata answers come later (from
    /// another thread, at once); counts the writes that reach `finish`.
    final class LaterMetadataStore: ForwardingStore, @unchecked Sendable {
        let inner: any ValueStore
        init(_ inner: any ValueStore) { self.inner = inner }
        let asked = Locked(0)
        let finished = Locked(0)

        func currentMetadata(of key: StoreKey) -> StoreReply<ValueMetadata?> {
            asked.withLock { $0 += 1 }
            let now = Result { try inner.currentMetadata(of: key).get() }
            return .later { pending in DispatchQueue.global().async { pending.fulfil(now) } }
        }

        func beginUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
                                  expiresNanos: Int64?, condition: WriteCondition?) throws -> ValueWriter {
            let writer = try inner.beginUpload(key: key, contentType: contentType, encoding: encoding,
                                               expiresNanos: expiresNanos, condition: condition)
            return ReleasingWriter(writer) { [finished] in finished.withLock { $0 += 1 } }
        }
    }

    static func laterServer() throws -> (TestServer, LaterMetadataStore) {
        let made = Locked<LaterMetadataStore?>(nil)
        let server = try TestServer(dataDirectory: TestServer.makeTempDirectory()) { setup in
            let options = setup.store
            setup.openStore = { changes, logger in
                let store = LaterMetadataStore(try DiskStore(options: options, logger: logger, changes: changes))
                made.withLock { $0 = store }
                return store
            }
        }
        return (server, try #require(made.withLock { $0 }))
    }

    @Test func withoutExpectContinueTheWriteAloneDecidesAndNoLookIsAsked() throws {
        let (server, store) = try Self.laterServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("k", "old").status == 201)
        // No Expect: the body comes anyway, so an early look would only cost
        // a read; the write's own check answers.
        let connection = try server.connection(timeout: 10)
        try connection.send("PUT /store/k HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
                            + "If-None-Match: *\r\n\r\nnew")
        let response = try connection.readResponse()
        #expect(response.status == 412, "\(response.status) \(response.text)")
        #expect(store.asked.withLock { $0 } == 0, "no early look without Expect: 100-continue")
        #expect(try client.get("k").text == "old")
    }

    @Test func aConditionThatFailsWhileTheClientWaitsForContinueIsA412BeforeTheBody() throws {
        let (server, store) = try Self.laterServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("k", "old").status == 201)
        let writesBefore = store.finished.withLock { $0 }
        let connection = try server.connection(timeout: 10)
        try connection.send("PUT /store/k HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
                            + "If-Match: \"not-it\"\r\nExpect: 100-continue\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 412, "\(response.status) \(response.text)")
        #expect(store.finished.withLock { $0 } == writesBefore)
        // A passing condition gets 100 Continue and is written.
        let etag = try #require(try client.get("k").header("ETag"))
        let second = try server.connection(timeout: 10)
        try second.send("PUT /store/k HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
                        + "If-Match: \(etag)\r\nExpect: 100-continue\r\n\r\n")
        #expect(try second.readResponse(skipInterim: false).status == 100)
        #expect(store.asked.withLock { $0 } == 2)
        try second.send("new")
        #expect(try second.readResponse().status == 204)
        #expect(try client.get("k").text == "new")
        #expect(store.finished.withLock { $0 } == writesBefore + 1)
    }
}
