import Foundation
import LarderTestSupport
import LarderWire
import Testing

/// How the viewer's files are served: `/` and `/viewer/...` from the copy
/// built into the binary, with a strong ETag, `Cache-Control: no-cache`,
/// 304 on revalidation, and nothing outside the viewer's files.
@Suite(.blockingLane) struct ViewerTests {
    @Test func rootServesTheViewerAndNothingOutsidePublic() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let index = try client.send("GET", "/")
        #expect(index.status == 200)
        #expect(index.header("Content-Type") == "text/html; charset=utf-8")
        #expect(index.text.contains("<title>Larder</title>"))
        for alias in ["/viewer", "/viewer/", "/viewer/index.html"] {
            #expect(try client.send("GET", alias).body == index.body, "\(alias)")
        }
        let head = try client.send("HEAD", "/")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.header("Content-Length") == String(index.body.count))
        #expect(head.header("ETag") == index.header("ETag"))
        #expect(try client.send("PUT", "/", body: Array("x".utf8)).status == 405)
    }

    @Test func everyAnswerCarriesAStrongETagAndNoCache() throws {
        let server = try TestServer()
        defer { server.stop() }
        let index = try server.client().send("GET", "/")
        let tag = try #require(index.header("ETag"))
        #expect(tag.hasPrefix("\"") && tag.hasSuffix("\"") && !tag.hasPrefix("W/"), "\(tag)")
        #expect(index.header("Cache-Control") == "no-cache")
    }

    @Test func aMatchingIfNoneMatchIsA304WithNoBody() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag = try #require(try client.send("GET", "/").header("ETag"))
        for condition in [tag, "W/" + tag, "\"other\", " + tag, "*"] {
            let again = try client.send("GET", "/", headers: [("If-None-Match", condition)])
            #expect(again.status == 304, "\(condition)")
            #expect(again.body.isEmpty)
            #expect(again.header("ETag") == tag)
            #expect(again.header("Cache-Control") == "no-cache")
        }
        #expect(try client.send("HEAD", "/viewer/", headers: [("If-None-Match", tag)]).status == 304)
        #expect(try client.send("GET", "/", headers: [("If-None-Match", "\"stale\"")]).status == 200)
    }

    /// Raw request targets, sent as written (no client-side normalization).
    @Test(arguments: [
        "/viewer/../Package.swift", "/viewer/%2e%2e/Package.swift", "/viewer/%2E%2E/Package.swift",
        "/viewer/..%2fPackage.swift", "/viewer/..\\Package.swift", "/viewer/sub\\..\\index.html",
        "/viewer/.hidden", "/viewer//index.html", "/viewer/index.html%00", "/viewer/no-such-file.js",
        "/viewer/./index.html", "/viewer/%69ndex.html",
    ])
    func traversalAndOddPathsAre404(target: String) throws {
        let server = try TestServer()
        defer { server.stop() }
        let answer = try server.client().send("GET", target)
        #expect(answer.status == 404, "\(target): \(answer.status)")
    }
}
