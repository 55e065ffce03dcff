import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// A PUT around a value's expiry: over a value that expired but was not swept
/// yet it is a create (201), and a rewrite without `?ttl` before the deadline
/// drops the deadline.
@Suite(.blockingLane) struct ExpiryRewriteTests {
    /// Before: a PUT answered 204 when the value's file was still there,
    /// although the value had expired (every reader already saw 404) and the
    /// sweep had not removed it yet. Fifty keys, their expiries spread over
    /// half a second, so that some land between two sweeps (≥ 50 ms apart).
    @Test func putOverAnExpiredUnsweptValueIsACreate() throws {
        let server = try TestServer()
        defer { server.stop() }
        let port = server.port, data = server.dataDirectory
        let unswept = HitCounter()
        let errors = S.onThreads(50) { i in
            let key = "exp/k\(i)"
            let connection = try HTTPClientConnection(port: port, timeout: 10)
            usleep(UInt32(i) * 10_000)
            let first = try connection.request("PUT", "/store/\(key)?ttl=1", body: Array("old".utf8))
            guard first.status == 201 else { throw ClientError("\(key): PUT ?ttl=1 answered \(first.status)") }
            usleep(800_000)
            let start = Date()
            while try connection.request("GET", "/store/\(key)").status != 404 {
                guard Date().timeIntervalSince(start) < 3 else { throw ClientError("\(key): still readable 3 s after PUT ?ttl=1") }
                usleep(20_000)
            }
            let fileLeft = FileManager.default.fileExists(atPath: data + "/values/" + S.diskPath(key))
            let put = try connection.request("PUT", "/store/\(key)", body: Array("new".utf8))
            if fileLeft { unswept.add() }
            guard put.status == 201 else {
                throw ClientError("\(key): PUT over the expired value answered \(put.status), not 201 (its file was \(fileLeft ? "still there" : "gone") just before)")
            }
            let get = try connection.request("GET", "/store/\(key)")
            guard get.status == 200, get.text == "new" else { throw ClientError("\(key): GET after the rewrite: \(get.status) \(get.text)") }
            guard get.header("Larder-Expires") == nil else { throw ClientError("\(key): the rewrite without ttl still expires") }
            let again = try connection.request("PUT", "/store/\(key)", body: Array("newer".utf8))
            guard again.status == 204 else { throw ClientError("\(key): a second PUT answered \(again.status), not 204") }
        }
        #expect(errors.isEmpty, "\(errors.count) failures: \(errors.prefix(4))")
        print("ExpiryRewriteTests: \(unswept.value) of 50 PUTs landed on an expired value not swept yet")
    }

    /// The other side: rewriting a TTL'd key without `?ttl` before it expires
    /// drops the old deadline. The value survives it, and a later PUT is an
    /// update (204), not a create.
    @Test func rewriteWithoutTTLOutlivesTheOldDeadline() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 10)
        let keys = (0..<5).map { "keep/k\($0)" }
        for key in keys {
            #expect(try connection.request("PUT", "/store/\(key)?ttl=1", body: Array("short".utf8)).status == 201)
            let rewrite = try connection.request("PUT", "/store/\(key)", body: Array("long".utf8))
            #expect(rewrite.status == 204, "\(key): rewrite answered \(rewrite.status)")
            #expect(rewrite.header("Larder-Expires") == nil)
        }
        usleep(1_600_000)   // past the old deadline and its sweep
        for key in keys {
            let get = try connection.request("GET", "/store/\(key)")
            #expect(get.status == 200, "\(key): \(get.status) after the old deadline")
            #expect(get.text == "long")
            #expect(get.header("Larder-Expires") == nil)
            let put = try connection.request("PUT", "/store/\(key)", body: Array("later".utf8))
            #expect(put.status == 204, "\(key): PUT after the old deadline answered \(put.status), not 204")
        }
        let list = try connection.request("GET", "/store/keep/")
        #expect((list.json?["keys"] as? [Any])?.count == keys.count, "listing: \(list.text)")
    }
}

/// A count shared by test threads.
private final class HitCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
