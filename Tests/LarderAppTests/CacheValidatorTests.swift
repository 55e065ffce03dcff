import Foundation
import LarderWire
import Testing
import LarderTestSupport

/// What REDbot asked for: every answer says how a cache may keep it. A
/// listing is `no-cache` with a strong ETag of the page (and a 304 for
/// `If-None-Match` with it); `/healthz` is `no-store`, as `/metrics` is.
@Suite(.blockingLane) struct CacheValidatorTests {
    @Test func listingCarriesNoCacheAndAnETagOfThePage() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("users/1", "one").status == 201)
        #expect(try client.put("users/2", "two").status == 201)

        let first = try client.list("users/")
        #expect(first.status == 200)
        #expect(first.header("Cache-Control") == "no-cache")
        let etag = try #require(first.header("ETag"))
        #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && !etag.hasPrefix("W/"), "a strong tag: \(etag)")

        // The same page, the same tag; HEAD carries it too.
        #expect(try client.list("users/").header("ETag") == etag)
        let head = try client.send("HEAD", "/store/users/")
        #expect(head.status == 200 && head.header("ETag") == etag && head.header("Cache-Control") == "no-cache")

        // Revalidation: 304, no body, the tag and the cache directive again.
        let same = try client.send("GET", "/store/users/", headers: [("If-None-Match", etag)])
        #expect(same.status == 304, "\(same.status) \(same.text)")
        #expect(same.body.isEmpty)
        #expect(same.header("ETag") == etag)
        #expect(same.header("Cache-Control") == "no-cache")
        #expect(try client.send("GET", "/store/users/", headers: [("If-None-Match", "W/\(etag)")]).status == 304)
        #expect(try client.send("GET", "/store/users/", headers: [("If-None-Match", "\"other\"")]).status == 200)

        // Any write under the page changes it, and the tag with it.
        #expect(try client.put("users/2", "TWO").status == 204)
        let changed = try client.send("GET", "/store/users/", headers: [("If-None-Match", etag)])
        #expect(changed.status == 200, "a changed page is sent again")
        #expect(changed.header("ETag") != etag)
        #expect((changed.json?["keys"] as? [[String: Any]])?.count == 2)
        // A page of another prefix or size has its own tag.
        #expect(try client.list("users/", query: "limit=1").header("ETag") != changed.header("ETag"))
    }

    @Test func healthAnswerIsNeverStored() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let health = try client.send("GET", "/healthz")
        #expect(health.status == 200)
        #expect(health.header("Cache-Control") == "no-store")
        #expect(try client.send("HEAD", "/healthz").header("Cache-Control") == "no-store")
        #expect(try client.send("GET", "/metrics").header("Cache-Control") == "no-store")
    }
}
