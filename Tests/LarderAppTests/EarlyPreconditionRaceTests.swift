import Foundation
import LarderDiskStore
import LarderStorage
import LarderSupport
import LarderValueFile
import LarderWire
import Testing
import LarderTestSupport

/// The early check of a conditional write (`PreconditionGate`, on a store
/// that answers later) and the write itself decide once between them: a
/// client that sends its body without waiting for `100 Continue` may have
/// it written before the early answer comes, and then the write's own
/// check at commit is the answer. A 412 must never go out for a write that
/// was applied.
@Suite struct EarlyPreconditionRaceTests {
    /// The disk store seen as one that answers later: the metadata the gate
    /// asks for is read at once but handed over only when the write
    /// finishes, so the early answer (now stale) always arrives after the body.
    final class LateMetadataStore: ForwardingStore, @unchecked Sendable {
        /// Guarded by its lock: the held answer, and whether one was asked for.
        let held = Locked<(answer: (@Sendable () -> Void)?, asked: Bool)>((nil, false))

        override var answersLater: Bool { true }

        override func currentMetadata(of key: StoreKey, then completion: @escaping @Sendable (Result<ValueMetadata?, Error>) -> Void) {
            let now = Result { () throws -> ValueMetadata? in
                do { let value = try inner.open(key); defer { value.close() }; return value.metadata }
                catch StoreError.notFound { return nil }
            }
            held.withLock { $0 = ({ completion(now) }, true) }
        }

        override func beginUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
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
        func finish() throws -> PutOutcome { release(); return try inner.finish() }
        func finish(then completion: @escaping @Sendable (Result<PutOutcome, Error>) -> Void) {
            release()
            inner.finish(then: completion)
        }
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
}
