import Foundation
import LarderClient
import LarderTestSupport
import Testing

/// A `LarderClient` whose base URL ends in `/ns/<name>` speaks to that
/// namespace and works unchanged: saves, reads, listings, the change feed
/// and a reset, none of which another namespace or the default one sees.
@Suite(.asyncLane) struct NamespaceClientTests {
    static func client(_ server: TestServer, _ path: String) -> LarderClient {
        LarderClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)\(path)")!, timeout: 10)
    }

    @Test func aClientWhoseBaseURLEndsInANamespaceWorksUnchanged() async throws {
        let server = try TestServer()
        let w1 = Self.client(server, "/ns/w1")
        let w2 = Self.client(server, "/ns/w2/")  // a trailing slash too
        let main = Self.client(server, "")

        let first = try await w1.save(Data("one".utf8), at: "notes/a")
        #expect(first.created)
        #expect(try await w2.save(Data("two".utf8), at: "notes/a").created)
        #expect(try await w1.fetch("notes/a").data == Data("one".utf8))
        #expect(try await w2.fetch("notes/a").data == Data("two".utf8))
        #expect(try await main.fetchIfPresent("notes/a") == nil)
        #expect(try await w1.listPage(prefix: "notes/", after: nil, limit: 100, delimiter: false).keys.map(\.key) == ["notes/a"])

        let feed = try await w1.changes(prefix: "notes/")
        var events = feed.makeAsyncIterator()
        _ = try await w2.save(Data("not w1's".utf8), at: "notes/b")
        _ = try await w1.save(Data("w1's".utf8), at: "notes/c")
        let event = try await events.next()
        #expect(event?.key == "notes/c", "\(String(describing: event))")

        #expect(try await w1.removeAll() == 2)
        #expect(try await w1.fetchIfPresent("notes/a") == nil)
        #expect(try await w2.fetch("notes/a").data == Data("two".utf8))
    }
}
