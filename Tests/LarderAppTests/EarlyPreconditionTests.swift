import Foundation
import LarderWire
import Testing
import LarderTestSupport

/// A conditional write sent with `Expect: 100-continue` whose precondition
/// already fails gets its 412 before the body is sent, on both stores: the
/// disk store reads the metadata in the route, the PostgreSQL store asks
/// the database asynchronously before `100 Continue` (no thread waits). A
/// precondition that holds gets `100 Continue`, and the write goes ahead.
@Suite(.blockingLane) struct EarlyPreconditionTests {
    enum Store: String, CaseIterable, CustomTestStringConvertible {
        case disk, postgres
        var testDescription: String { rawValue }
    }

    /// The stores to run on: PostgreSQL where it is installed.
    static let stores: [Store] = TestPostgres.isAvailable ? Store.allCases : [.disk]

    static func server(_ store: Store) throws -> TestServer {
        switch store {
        case .disk: try TestServer(dataDirectory: TestServer.makeTempDirectory())
        case .postgres: try TestServer(postgresSchema: TestPostgres.makeSchemaName())
        }
    }

    /// Sends the head only; the first answer must be the final 412, and the
    /// connection closes (the body was never read).
    static func expectRefusedBeforeBody(_ server: TestServer, _ method: String, _ key: String, _ condition: (String, String),
                                        contentType: String = "text/plain", sourceLocation: SourceLocation = #_sourceLocation) throws {
        let connection = try server.connection(timeout: 10)
        try connection.send("\(method) /store/\(key) HTTP/1.1\r\nHost: x\r\nContent-Type: \(contentType)\r\nContent-Length: 11\r\n"
                            + "\(condition.0): \(condition.1)\r\nExpect: 100-continue\r\n\r\n")
        let response = try connection.readResponse(skipInterim: false)
        ProtocolWire.expectError(response, 412, "precondition_failed", sourceLocation: sourceLocation)
        ProtocolWire.expectCloses(response, connection, sourceLocation: sourceLocation)
    }

    @Test(arguments: stores)
    func aFailingPreconditionIs412BeforeTheBody(store: Store) throws {
        let server = try Self.server(store)
        defer { server.stop() }
        let client = server.client()
        let put = try client.put("cas", "[1]", contentType: "application/json")
        let etag = try #require(put.header("ETag"))

        try Self.expectRefusedBeforeBody(server, "PUT", "cas", ("If-Match", "\"stale\""))
        try Self.expectRefusedBeforeBody(server, "PUT", "cas", ("If-None-Match", "*"))
        try Self.expectRefusedBeforeBody(server, "PUT", "absent", ("If-Match", etag))
        try Self.expectRefusedBeforeBody(server, "POST", "cas", ("If-Match", "\"stale\""), contentType: "application/json")
        try Self.expectRefusedBeforeBody(server, "PATCH", "cas", ("If-None-Match", etag), contentType: "application/json")
        let now = try client.get("cas")
        #expect(now.text == "[1]" && now.header("ETag") == etag, "nothing was written")
        #expect(try client.get("absent").status == 404)
    }

    @Test(arguments: stores)
    func aHoldingPreconditionGets100ContinueThenTheWrite(store: Store) throws {
        let server = try Self.server(store)
        defer { server.stop() }
        let client = server.client()
        let etag = try #require(try client.put("cas", "[1]", contentType: "application/json").header("ETag"))
        let connection = try server.connection(timeout: 10)
        try connection.send("PUT /store/cas HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\n"
                            + "If-Match: \(etag)\r\nExpect: 100-continue\r\n\r\n")
        #expect(try connection.readResponse(skipInterim: false).status == 100)
        try connection.send("[1,2]")
        let written = try connection.readResponse(skipInterim: false)
        #expect(written.status == 204, "\(written.status) \(written.text)")
        let next = try #require(written.header("ETag"))

        // Create-only on an absent key, then an append, on the same connection.
        try connection.send("PUT /store/new HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nIf-None-Match: *\r\nExpect: 100-continue\r\n\r\n")
        #expect(try connection.readResponse(skipInterim: false).status == 100)
        try connection.send("hi")
        #expect(try connection.readResponse(skipInterim: false).status == 201)
        try connection.send("POST /store/cas HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1\r\n"
                            + "If-Match: \(next)\r\nExpect: 100-continue\r\n\r\n")
        #expect(try connection.readResponse(skipInterim: false).status == 100)
        try connection.send("3")
        let appended = try connection.readResponse(skipInterim: false)
        #expect(appended.status == 200, "\(appended.text)")
        #expect(try client.get("cas").text == "[1,2,3]")
        #expect(try client.get("new").text == "hi")
    }

    /// A client that sends its body without waiting for `100 Continue` is
    /// served as usual; the store still checks the condition at commit.
    @Test(arguments: stores)
    func aBodySentWithoutWaitingIsStillJudgedByTheCondition(store: Store) throws {
        let server = try Self.server(store)
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("k", "v1").status == 201)
        let connection = try server.connection(timeout: 10)
        try connection.send("PUT /store/k HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nIf-Match: \"stale\"\r\nExpect: 100-continue\r\n\r\nv2")
        let response = try connection.readResponse()
        #expect(response.status == 412)
        #expect(try client.get("k").text == "v1")
    }
}
