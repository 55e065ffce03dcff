import Foundation
import LarderClient
import LarderTestSupport
import Testing

/// `journal()` and `journalEntries()` against the real server, through
/// clients whose base URL is a namespace (as a test suite's worker has):
/// the filters, the paths inside the namespace, a live stream that sees
/// the requests made after it started in order and ends on cancel.
@Suite(.asyncLane) struct JournalClientTests {
    static func client(_ server: TestServer, _ path: String) -> LarderClient {
        LarderClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)\(path)")!, timeout: 10)
    }

    @Test func aPageHoldsTheNamespacesRequestsAsFiltered() async throws {
        let server = try TestServer()
        let w1 = Self.client(server, "/ns/w1")
        let w2 = Self.client(server, "/ns/w2")
        let saved = try await w1.save(Data("ada".utf8), at: "users/7")
        _ = try await w1.fetch("users/7")
        _ = try await w1.fetchIfPresent("users/8")
        _ = try await w2.fetchIfPresent("users/7")

        let all = try await w1.journal()
        #expect(all.requests.map(\.method) == ["PUT", "GET", "GET"])
        #expect(all.requests.map(\.path) == ["/store/users/7", "/store/users/7", "/store/users/8"])
        #expect(all.requests.map(\.status) == [201, 200, 404])
        #expect(all.requests[0].etag == saved.etag && all.requests[0].bytesIn == 3)
        #expect(all.next == all.requests[2].seq && all.dropped == 0)

        #expect(try await w1.journal(method: "get", prefix: "users/7").requests.count == 1)
        #expect(try await w1.journal(status: "4xx").requests.map(\.path) == ["/store/users/8"])
        #expect(try await w1.journal(status: "404").requests.count == 1)
        let paged = try await w1.journal(since: all.requests[0].seq, limit: 1)
        #expect(paged.requests.map(\.seq) == [all.requests[1].seq] && paged.next == all.requests[1].seq)
        #expect(try await w2.journal().requests.map(\.status) == [404], "w2 sees only its own request")

        // A reset empties it, so a test that resets first sees only its own requests.
        _ = try await w1.removeAll()
        #expect(try await w1.journal().requests.isEmpty)
        await #expect { try await w1.journal(status: "4x") } throws: { error in
            if case LarderError.server(400, _) = error { return true } else { return false }
        }
    }

    @Test func withoutAJournalTheServerSaysSo() async throws {
        let server = try TestServer { $0.journal = 0 }
        await #expect { try await Self.client(server, "").journal() } throws: { error in
            if case LarderError.server(404, _) = error { return true } else { return false }
        }
    }

    @Test func theStreamYieldsTheRequestsMadeAfterItStartedInOrder() async throws {
        let server = try TestServer()
        let larder = Self.client(server, "/ns/live")
        let live = server.server
        _ = try await larder.save(Data("before".utf8), at: "live/old")
        let seen = try await LarderClientTests.within(60) { () -> [JournalEntry] in
            var entries = try await larder.journalEntries().makeAsyncIterator()
            _ = try await larder.save(Data("1".utf8), at: "live/a")
            _ = try await larder.fetch("live/a")
            // Once the stream's poll waits, the next requests must wake it.
            try await Poll.until("the stream to wait") { live.journalWaiterCount == 1 }
            _ = try await larder.delete("live/a")
            _ = try await larder.fetchIfPresent("live/a")
            var seen: [JournalEntry] = []
            for _ in 0..<4 { seen.append(try #require(try await entries.next())) }
            return seen
        }
        #expect(seen.map(\.method) == ["PUT", "GET", "DELETE", "GET"])
        #expect(seen.map(\.path) == Array(repeating: "/store/live/a", count: 4))
        #expect(seen.map(\.status) == [201, 200, 204, 404])
        #expect(seen.map(\.seq) == seen.map(\.seq).sorted() && Set(seen.map(\.seq)).count == 4)
        // The stream is gone with its iterator: its poll is forgotten.
        try await Poll.until("the stream's poll to end") { live.journalWaiterCount == 0 }

        // From a sequence number, with a filter: what came after it that matches.
        let replayed = try await LarderClientTests.within(60) { () -> [JournalEntry] in
            var entries = try await larder.journalEntries(method: "GET", since: seen[0].seq).makeAsyncIterator()
            return [try #require(try await entries.next()), try #require(try await entries.next())]
        }
        #expect(replayed == [seen[1], seen[3]])
    }

    @Test func cancellingTheConsumerEndsTheStreamAndItsPoll() async throws {
        let server = try TestServer()
        let larder = Self.client(server, "/ns/quiet")
        let entries = try await larder.journalEntries(prefix: "nobody/writes/here")
        let consumer = Task { () -> Int in
            var count = 0
            for try await _ in entries { count += 1 }
            return count
        }
        try await Poll.until("the stream to wait") { server.server.journalWaiterCount == 1 }
        consumer.cancel()
        let count = try await LarderClientTests.within(10) { try await consumer.value }
        #expect(count == 0)
        try await Poll.until("the cancelled poll to be forgotten") { server.server.journalWaiterCount == 0 }
    }
}
