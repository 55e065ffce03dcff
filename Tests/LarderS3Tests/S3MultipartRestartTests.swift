import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A multipart upload in progress is kept in the store (its record and
/// parts are values), so it outlives the server: parts uploaded before a
/// restart are listed after it, and the upload completes with them.
@Suite(.blockingLane) struct S3MultipartRestartTests {
    /// The `larder` binary on `directory`, and its S3 port (from its log).
    static func start(_ directory: String) throws -> (ChildServer, Int) {
        let child = try ChildServer(dataDirectory: directory, arguments: ["--s3-port", "0", "--no-fsync", "--log-level", "notice"])
        guard Poll.holds(within: 10, { child.log.contains("S3 listening on") }),
              let match = child.log.firstMatch(of: /S3 listening on http:\/\/[^\s:]+:(\d+)/), let port = Int(match.1) else {
            throw ClientError("no \"S3 listening on\" line in the log: \(child.log)")
        }
        return (child, port)
    }

    static func request(_ port: Int, _ method: String, _ target: String, body: [UInt8]? = nil) throws -> ClientResponse {
        let signed = S3MemoryTests.signed(method, target, payloadHash: "UNSIGNED-PAYLOAD", headers: [])
        let connection = try HTTPClientConnection(port: port)
        defer { connection.close() }
        return try connection.request(method, target, headers: Array(signed.headers.dropFirst()), body: body)
    }

    static func element(_ name: String, in text: String) -> String? {
        guard let open = text.range(of: "<\(name)>"), let close = text.range(of: "</\(name)>", range: open.upperBound..<text.endIndex)
        else { return nil }
        return String(text[open.upperBound..<close.lowerBound])
    }

    @Test func anUploadInProgressOutlivesARestart() throws {
        let directory = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = Bytes.random(count: 5 << 20, seed: 3, alphabetBits: 8), second = Array("and the end".utf8)
        var (child, port) = try Self.start(directory)
        #expect(try Self.request(port, "PUT", "/kept").status == 200)
        let created = try Self.request(port, "POST", "/kept/object?uploads")
        let id = try #require(Self.element("UploadId", in: created.text), "\(created.text)")
        let part1 = try Self.request(port, "PUT", "/kept/object?partNumber=1&uploadId=\(id)", body: first)
        #expect(part1.status == 200)
        let etag1 = try #require(part1.header("ETag"))

        child.kill(SIGTERM)
        child.process.waitUntilExit()
        (child, port) = try Self.start(directory)
        defer { child.kill(SIGKILL) }

        let listed = try Self.request(port, "GET", "/kept/object?uploadId=\(id)")
        // XML writes the ETag's quotes as `&quot;`, as S3 does.
        let inXML = etag1.replacingOccurrences(of: "\"", with: "&quot;")
        #expect(listed.status == 200 && Self.element("ETag", in: listed.text) == inXML, "ListParts after a restart: \(listed.text)")
        let uploads = try Self.request(port, "GET", "/kept?uploads")
        #expect(Self.element("UploadId", in: uploads.text) == id, "ListMultipartUploads after a restart: \(uploads.text)")
        let part2 = try Self.request(port, "PUT", "/kept/object?partNumber=2&uploadId=\(id)", body: second)
        let etag2 = try #require(part2.header("ETag"))
        let document = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\(etag1)</ETag></Part>"
            + "<Part><PartNumber>2</PartNumber><ETag>\(etag2)</ETag></Part></CompleteMultipartUpload>"
        let completed = try Self.request(port, "POST", "/kept/object?uploadId=\(id)", body: Array(document.utf8))
        #expect(completed.status == 200 && Self.element("ETag", in: completed.text)?.hasSuffix("-2&quot;") == true,
                "Complete after a restart: \(completed.text)")
        let got = try Self.request(port, "GET", "/kept/object")
        #expect(got.status == 200 && got.body == first + second)
        #expect(try Self.request(port, "GET", "/kept/object?uploadId=\(id)").status == 404, "the upload is gone once completed")
    }
}
