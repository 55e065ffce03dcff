import Foundation
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing

/// Small values are served from an in-memory cache; it must never serve a
/// value that was replaced or deleted.
@Suite(.blockingLane) struct CacheCoherenceTests {
    @Test func replaceAndDeleteAreSeenRightAfterACachedRead() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        try client.put("k", "one")
        #expect(try client.get("k").text == "one")   // fills the cache
        #expect(try client.get("k").text == "one")   // served from it
        try client.put("k", "two")
        #expect(try client.get("k").text == "two")
        try client.delete("k")
        #expect(try client.get("k").status == 404)
        try client.put("k", "three")
        #expect(try client.get("k").text == "three")
        #expect(try client.deletePrefix("").status == 200)
        #expect(try client.get("k").status == 404)
    }

    @Test func readersNeverGoBackInTimeWhileAWriterReplacesTheValue() throws {
        let server = try TestServer()
        defer { server.stop() }
        let port = server.port
        try server.client().put("counter", "0")
        let writes = 300
        let finished = Locked(false)
        let problems = Locked<[String]>([])
        let writer = Thread {
            let client = WireClient(port: port)
            for i in 1...writes {
                if (try? client.put("counter", "\(i)"))?.status != 204 { problems.withLock { $0.append("PUT \(i) failed") } }
            }
            finished.withLock { $0 = true }
        }
        let group = DispatchGroup()
        var readers: [Thread] = []
        for _ in 0..<3 {
            group.enter()
            readers.append(Thread {
                defer { group.leave() }
                let client = WireClient(port: port)
                var last = 0
                while !finished.withLock({ $0 }) {
                    guard let text = try? client.get("counter").text, let n = Int(text) else {
                        problems.withLock { $0.append("unreadable value") }
                        return
                    }
                    if n < last { problems.withLock { $0.append("read \(n) after \(last)") } }
                    last = n
                }
            })
        }
        writer.start()
        readers.forEach { $0.start() }
        group.wait()
        #expect(problems.withLock { $0 }.isEmpty, "\(problems.withLock { $0 }.prefix(5))")
        #expect(try server.client().get("counter").text == "\(writes)")
    }
}
