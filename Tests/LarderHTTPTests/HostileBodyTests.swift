import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/reliability.md: bodies built to hurt (nesting 100,000 deep, a
/// snapshot line of 100 MiB) get a clear 4xx, change nothing, and the
/// server goes on serving. Real server, real sockets.
@Suite(.blockingLane) struct HostileBodyTests {
    /// `POST /snapshot` with `document`.
    static func restore(_ client: WireClient, _ document: [UInt8]) throws -> ClientResponse {
        try client.send("POST", "/snapshot", body: document)
    }

    static let deep = Array((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
    static let deepObject = Array((String(repeating: #"{"a":"#, count: 100_000) + "1" + String(repeating: "}", count: 100_000)).utf8)

    @Test func nesting100000DeepIsRefusedEverywhereJSONIsRead() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("list", "[1,2]", contentType: "application/json").status == 201)
        for body in [Self.deep, Self.deepObject] {
            let append = try client.send("POST", "/store/list?append", headers: [("Content-Type", "application/json")], body: body)
            #expect(append.status == 400, "append: \(append.status) \(append.text)")
            #expect(append.text.contains("deeper than"), "append says why: \(append.text)")
            let patch = try client.send("PATCH", "/store/list", headers: [("Content-Type", "application/merge-patch+json")], body: body)
            #expect(patch.status == 400, "patch: \(patch.status) \(patch.text)")
            let restore = try Self.restore(client, Array(#"{"key":"deep","json":"#.utf8) + body + Array("}\n".utf8))
            S.expectError(restore, status: 400, code: "invalid_snapshot")
            #expect(try client.get("deep").status == 404, "nothing restored")
        }
        #expect(try client.get("list").text == "[1,2]", "the value is untouched")
        // Stored as a value it is just bytes (JSON is only parsed where it is used).
        #expect(try S.put(client, key: "deep-bytes", Self.deep, contentType: "application/json").status == 201)
        #expect(try client.send("GET", "/healthz").status == 200)
    }

    /// A 100 MiB snapshot line that is not a value streaming in (its value
    /// member does not come last): refused once it passes the 4 MiB line
    /// limit, without reading (or holding) the rest.
    @Test func aSnapshotLineOf100MiBIsRefusedInBoundedMemory() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync"])
        defer { child.kill(SIGKILL); _ = child.waitForExit() }
        let before = child.peakRSSKiB() ?? 0
        let padding = [UInt8](repeating: UInt8(ascii: "a"), count: 100 << 20)
        let line = Array(#"{"key":"huge","pad":""#.utf8) + padding + Array(#"","text":"x"}"#.utf8) + [0x0A]
        do {
            let response = try Self.restore(child.client(), line)
            S.expectError(response, status: 400, code: "invalid_snapshot")
            #expect(response.text.contains("line 1"), "\(response.text)")
        } catch {
            // The server answered and closed without reading 96 MiB more: the
            // client may see the reset before the answer. Either way the
            // server must not have taken the line, and must still serve.
        }
        #expect(try child.client().get("huge").status == 404)
        #expect(try child.client().send("GET", "/healthz").status == 200)
        let grown = (child.peakRSSKiB() ?? 0) - before
        #expect(grown < 48 << 10, "peak RSS grew by \(grown) KiB for a 100 MiB line")
    }
}
