import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// API.md, Protocol: a client that half-closes (shuts its writing side,
/// as `nc -N` and some raw clients do) after a complete request still gets
/// its answer, as every request before it on that connection does, and
/// the server closes after answering. A write is never applied unanswered.
/// With fsync on, a PUT waits for the group commit: the case that lost its
/// answer when end-of-input was taken for a hang-up. (Run on PostgreSQL
/// too by `.ci/postgres-api`, where every request waits on the database.)
@Suite(.blockingLane) struct HalfCloseTests {
    /// A conditional GET that waits (`?wait=`) while the value's ETag is `etag`.
    static func watchRequest(_ target: String, etag: String) -> String {
        "GET \(target) HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: \(etag)\r\n\r\n"
    }

    /// Polls until `server.watcherCount == count`; false after `seconds`.
    static func waitForWatchers(_ server: TestServer, _ count: Int, within seconds: Double = Poll.patience) -> Bool {
        Poll.holds(within: seconds, every: 0.001) { server.server.watcherCount == count }
    }

    static func durableServer() throws -> TestServer { try TestServer { $0.store.fsync = true } }

    /// Sends `request`, shuts the writing side, reads `count` answers, and
    /// checks the server then closes.
    static func halfClosed(_ server: TestServer, _ request: String, answers count: Int = 1) throws -> [ClientResponse] {
        let connection = try server.connection(timeout: 30)
        try connection.send(request)
        connection.shutdownWrite()
        var answers: [ClientResponse] = []
        for _ in 0..<count { answers.append(try connection.readResponse(bodyExpected: !request.hasPrefix("HEAD"))) }
        #expect(ProtocolWire.closedByServer(connection, within: 30), "the server did not close after answering")
        return answers
    }

    @Test func everyMethodIsAnsweredAfterAHalfClose() throws {
        let server = try Self.durableServer()
        defer { server.stop() }
        let client = server.client()
        for i in 0..<10 {
            let put = try Self.halfClosed(server, "PUT /store/hc/\(i) HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nvalue")
            #expect(put.first?.status == 201, "PUT \(i): \(put.first?.status ?? 0)")
            #expect(try client.get("hc/\(i)").text == "value")
            let get = try Self.halfClosed(server, "GET /store/hc/\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(get.first?.status == 200 && get.first?.text == "value")
            let head = try Self.halfClosed(server, "HEAD /store/hc/\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(head.first?.status == 200)
            let append = try Self.halfClosed(server, "POST /store/hc/list HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                             + "Content-Length: 3\r\n\r\n\"\(i)\"")
            #expect(append.first.map { (200...201).contains($0.status) } == true, "append \(i): \(append.first?.status ?? 0)")
            let delete = try Self.halfClosed(server, "DELETE /store/hc/\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(delete.first?.status == 204)
            #expect(try client.get("hc/\(i)").status == 404)
        }
        let stored = try client.get("hc/list")
        let list = try? JSONSerialization.jsonObject(with: Data(stored.body)) as? [String]
        #expect(list == (0..<10).map(String.init), "every append answered was applied once: \(stored.text)")
    }

    @Test func pipelinedRequestsBeforeTheHalfCloseAreAllAnsweredInOrder() throws {
        let server = try Self.durableServer()
        defer { server.stop() }
        let answers = try Self.halfClosed(server, "PUT /store/hc/p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\none"
                                          + "GET /store/hc/p HTTP/1.1\r\nHost: x\r\n\r\n"
                                          + "PUT /store/hc/p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\ntwo"
                                          + "DELETE /store/hc/q HTTP/1.1\r\nHost: x\r\n\r\n", answers: 4)
        #expect(answers.map(\.status) == [201, 200, 204, 404])
        #expect(answers[1].text == "one")
        #expect(try server.client().get("hc/p").text == "two")
    }

    /// A body cut short by the half-close is not a complete request: it is
    /// refused, nothing is stored, and the connection ends.
    @Test func aBodyCutShortByTheHalfCloseStoresNothing() throws {
        let server = try Self.durableServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 30)
        try connection.send("PUT /store/hc/cut HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly part")
        connection.shutdownWrite()
        if let answer = try? connection.readResponse() { #expect(answer.status == 400, "\(answer.status) \(answer.text)") }
        #expect(ProtocolWire.closedByServer(connection, within: 30))
        #expect(try server.client().get("hc/cut").status == 404)
    }

    /// A watch is a client waiting, not a request in flight: its client's
    /// end of input ends it (a half-close cannot be told from a hang-up).
    @Test func aParkedWatchEndsWithItsClientsEndOfInput() throws {
        let server = try TestServer()
        defer { server.stop() }
        let etag = try #require(try server.client().put("hc/w", "x").header("ETag"))
        let connection = try server.connection(timeout: 30)
        try connection.send(Self.watchRequest("/store/hc/w?wait=60", etag: etag))
        #expect(Self.waitForWatchers(server, 1))
        connection.shutdownWrite()
        #expect(Self.waitForWatchers(server, 0, within: 10), "the watch outlived its client")
        #expect(ProtocolWire.closedByServer(connection, within: 10))
    }
}
