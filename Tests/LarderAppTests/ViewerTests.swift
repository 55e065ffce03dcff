import Foundation
import LarderClient
import Testing

/// `/` and `/viewer/...` serve the browser viewer from `Public/`.
@Suite struct ViewerTests {
    static var publicDirectory: String {
        // Tests run from the package root; #filePath finds it from anywhere.
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Public").path
    }

    @Test func rootServesTheViewerAndNothingOutsidePublic() throws {
        let server = try TestServer { $0.publicDirectory = Self.publicDirectory }
        defer { server.stop() }
        let client = server.client()
        let index = try client.send("GET", "/")
        #expect(index.status == 200)
        #expect(index.header("Content-Type") == "text/html; charset=utf-8")
        #expect(index.text.contains("<title>Larder</title>"))
        #expect(try client.send("GET", "/viewer/index.html").body == index.body)
        let head = try client.send("HEAD", "/")
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == String(index.body.count))
        #expect(try client.send("GET", "/viewer/../Package.swift").status == 404)
        #expect(try client.send("GET", "/viewer/%2e%2e/Package.swift").status == 404)
        #expect(try client.send("PUT", "/", body: Array("x".utf8)).status == 405)
    }
}
