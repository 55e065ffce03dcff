import Foundation
@testable import LarderApp
import LarderRouting
import LarderServer
import LarderModel
import LarderTestSupport
import LarderWire
import Testing

/// A value read from the read cache is answered with a head formatted once
/// and kept with the cached entry (`HTTPHeaderBlock` in `CachedValueMemo`):
/// the first GET reads the file, the second fills the cache, the third and
/// later use the kept head. Every one of them must carry the same fields,
/// for each representation, and never a replaced value's.
@Suite(.blockingLane) struct CachedHeadTests {
    /// The fields a 200 of a value carries, without Date (it moves).
    static let fields = ["Content-Type", "ETag", "Last-Modified", "Vary", "Cache-Control", "Accept-Ranges",
                         "Larder-Source", "Content-Length", "Content-Encoding", "Larder-Expires"]

    static func head(_ response: ClientResponse) -> [String: [String]] {
        Dictionary(uniqueKeysWithValues: fields.map { ($0, response.headerValues($0)) })
    }

    /// Four reads in a row; all alike, and returned.
    static func readFourTimes(_ client: WireClient, _ target: String, headers: [(String, String)] = [],
                              method: String = "GET", sourceLocation: SourceLocation = #_sourceLocation) throws -> [ClientResponse] {
        let answers = try (0..<4).map { _ in try client.send(method, target, headers: headers) }
        for answer in answers.dropFirst() {
            #expect(answer.status == answers[0].status, sourceLocation: sourceLocation)
            #expect(head(answer) == head(answers[0]), sourceLocation: sourceLocation)
            #expect(answer.body == answers[0].body, sourceLocation: sourceLocation)
        }
        return answers
    }

    /// Compressible, and above the size the disk store keeps as one stored block.
    static let text = String(repeating: "a cached value, compressible; ", count: 160)

    @Test func everyReadOfEachRepresentationCarriesTheSameFields() throws {
        let server = try TestServer()
        let client = server.client()
        let put = try client.send("PUT", "/store/c/k?ttl=3600", headers: [("Content-Type", "text/plain")], body: Array(Self.text.utf8))
        #expect(put.status == 201)

        let identity = try Self.readFourTimes(client, "/store/c/k")[3]
        #expect(identity.text == Self.text)
        #expect(identity.header("Content-Type") == "text/plain")
        #expect(identity.header("ETag") == put.header("ETag"))
        #expect(identity.header("Content-Length") == "\(Self.text.utf8.count)")
        #expect(identity.header("Larder-Source") == "store")
        #expect(identity.header("Larder-Expires") != nil)
        #expect(identity.headerValues("Content-Encoding").isEmpty)

        let gzip = try Self.readFourTimes(client, "/store/c/k", headers: [("Accept-Encoding", "gzip")])[3]
        #expect(gzip.header("Content-Encoding") == "gzip")
        #expect(gzip.header("ETag") != identity.header("ETag"), "the gzip representation has its own tag")
        #expect(gzip.header("Content-Length") == "\(gzip.body.count)")
        #expect(gzip.body.count < Self.text.utf8.count)

        // HEAD and a range of the cached value: the same fields, their own length.
        let head = try Self.readFourTimes(client, "/store/c/k", method: "HEAD")[3]
        #expect(head.body.isEmpty && head.header("Content-Length") == identity.header("Content-Length"))
        #expect(head.header("ETag") == identity.header("ETag"))
        let range = try Self.readFourTimes(client, "/store/c/k", headers: [("Range", "bytes=2-5")])[3]
        #expect(range.status == 206 && range.text == "cach")
        #expect(range.header("Content-Range") == "bytes 2-5/\(Self.text.utf8.count)")
        #expect(range.header("Content-Length") == "4" && range.header("ETag") == identity.header("ETag"))
    }

    @Test func aReplacedValueIsNeverAnsweredWithTheOldHead() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.put("k", "first", contentType: "text/plain").status == 201)
        let first = try Self.readFourTimes(client, "/store/k")[3]
        #expect(try client.put("k", "{\"second\":true}", contentType: "application/json").status == 204)
        let second = try Self.readFourTimes(client, "/store/k")[3]
        #expect(second.text == "{\"second\":true}")
        #expect(second.header("Content-Type") == "application/json")
        #expect(second.header("ETag") != first.header("ETag"))
        #expect(second.header("Content-Length") == "15")
        #expect(second.headerValues("Larder-Expires").isEmpty)
    }

    @Test func aFixtureKeepsItsSourceOnEveryRead() throws {
        let fixtures = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        try Data("{\"seed\":1}".utf8).write(to: URL(fileURLWithPath: fixtures + "/seed.json"))
        let server = try TestServer { $0.fixturesDirectory = fixtures }
        let client = server.client()
        let fixture = try Self.readFourTimes(client, "/store/seed.json")[3]
        #expect(fixture.header("Larder-Source") == "fixture")
        // Written over, the key is the store's, and says so on every read.
        #expect(try client.put("seed.json", "{\"seed\":2}", contentType: "application/json").status == 204)
        let written = try Self.readFourTimes(client, "/store/seed.json")[3]
        #expect(written.header("Larder-Source") == "store")
        #expect(written.text == "{\"seed\":2}")
    }

    @Test func theJournalAndCORSSeeTheKeptHead() throws {
        let server = try TestServer { $0.corsOrigins = [CORSTests.app] }
        let client = server.client()
        let put = try client.put("j/k", "journaled", contentType: "text/plain")
        let origin = [("Origin", CORSTests.app)]
        let answers = try Self.readFourTimes(client, "/store/j/k", headers: origin)
        for answer in answers {
            // One Vary field naming both (CORS joins its Origin to the kept field).
            #expect(answer.headerValues("Vary").count == 1)
            #expect(CORSTests.list(answer, "Vary").sorted() == ["Accept-Encoding", "Origin"])
            #expect(answer.header("Access-Control-Allow-Origin") == CORSTests.app)
        }
        let page = try JournalTests.journal(client)
        let gets = page.requests.filter { $0.method == "GET" && $0.path == "/store/j/k" }
        #expect(gets.count == 4)
        #expect(gets.allSatisfy { $0.etag == put.header("ETag") && $0.status == 200 })
    }
}
