import CZlib
import Crypto
import Foundation
@testable import LarderS3
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A large upload through the S3 face streams to disk as a plain PUT does,
/// in both aws-chunked forms current SDKs send (unsigned chunks with a
/// CRC32 trailer; signed chunks): the server's peak RSS stays bounded, and
/// the object reads back whole through the plain API. On the `larder`
/// binary, so that the process's RSS is the server's alone.
///
/// The test run sends 256 MiB through each form (CI's time is counted);
/// `LARDER_S3_MEMORY_MIB=1024 swift test --filter S3MemoryTests` sends the
/// 1 GiB issue 20 names (peak RSS 39.9 MiB for each form on 2026-11-26).
@Suite(.longBlockingLane, .serialized) struct S3MemoryTests {
    static let size = (ProcessInfo.processInfo.environment["LARDER_S3_MEMORY_MIB"].flatMap { Int($0) } ?? 256) << 20
    static let chunkBytes = 1 << 16

    /// An `Authorization` signed with docs/s3.md's default keys (`target` may carry a query).
    static func signed(_ method: String, _ target: String, payloadHash: String, headers extra: [(String, String)])
        -> (headers: [(String, String)], signature: String, date: String, scope: SignatureV4.Scope) {
        let date = S3AuthErrorTests.amzDate(Int64(Date().timeIntervalSince1970))
        let scope = SignatureV4.Scope(date: String(date.prefix(8)), region: "us-east-1", service: "s3")
        let headers = [("Host", "localhost"), ("x-amz-date", date), ("x-amz-content-sha256", payloadHash)] + extra
        let question = target.firstIndex(of: "?")
        let request = SignatureV4.Request(method: method, path: Substring(target[..<(question ?? target.endIndex)]),
                                          query: question.map { target[target.index(after: $0)...] }, headers: headers,
                                          signedHeaders: headers.map { $0.0.lowercased() }.sorted(), payloadHash: payloadHash)
        let signature = SignatureV4.sign(request, secret: "larder-secret", amzDate: date, scope: scope)
        let authorization = "AWS4-HMAC-SHA256 Credential=larder/\(scope.string), "
            + "SignedHeaders=\(request.signedHeaders.joined(separator: ";")), Signature=\(signature)"
        return (headers + [("Authorization", authorization)], signature, date, scope)
    }

    static func head(_ method: String, _ target: String, _ headers: [(String, String)]) -> String {
        var text = "\(method) \(target) HTTP/1.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return text + "\r\n"
    }

    /// The i-th 64 KiB chunk of the object: a repeated block stamped with `i`, so no two are alike.
    static func chunk(_ i: Int, _ block: inout [UInt8]) {
        block.withUnsafeMutableBytes { $0.storeBytes(of: UInt64(i), as: UInt64.self) }
    }

    @Test(arguments: ["unsigned-trailer", "signed"])
    func aLargeUploadThroughAWSChunkedKeepsPeakRSSBounded(_ form: String) async throws {
        let server = try await S3ChildServer.start(arguments: ["--no-fsync", "--gzip-level", "1", "--log-level", "warning"])
        defer { server.stop() }
        let port = try #require(Int(server.s3URL.split(separator: ":").last ?? ""))
        let bucket = try HTTPClientConnection(port: port)
        let made = Self.signed("PUT", "/big", payloadHash: SignatureV4.emptyPayloadHash, headers: [])
        #expect(try bucket.request("PUT", "/big", headers: Array(made.headers.dropFirst())).status == 200)
        bucket.close()

        let count = Self.size / Self.chunkBytes
        var block = Bytes.random(count: Self.chunkBytes, seed: 7, alphabetBits: 6)
        let connection = try HTTPClientConnection(port: port, timeout: 600)
        defer { connection.close() }
        var crc = crc32(0, nil, 0)
        if form == "signed" {
            // Each chunk line is `<hex>;chunk-signature=<64 hex>`, so the framing's length is known ahead.
            let line = { (n: Int) in String(n, radix: 16).count + ";chunk-signature=".count + 64 + 2 }
            let length = count * (line(Self.chunkBytes) + Self.chunkBytes + 2) + line(0) + 2
            let request = Self.signed("PUT", "/big/object", payloadHash: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
                                 headers: [("Content-Encoding", "aws-chunked"), ("Content-Length", String(length)),
                                           ("x-amz-decoded-content-length", String(Self.size))])
            try connection.send(Self.head("PUT", "/big/object", request.headers))
            let key = SignatureV4.signingKey(secret: "larder-secret", scope: request.scope)
            var previous = request.signature
            func signChunk(_ data: [UInt8]) -> String {
                let toSign = ["AWS4-HMAC-SHA256-PAYLOAD", request.date, request.scope.string, previous, SignatureV4.emptyPayloadHash,
                              SignatureV4.hex(SHA256.hash(data: data))].joined(separator: "\n")
                previous = SignatureV4.hex(HMAC<SHA256>.authenticationCode(for: Array(toSign.utf8), using: key))
                return previous
            }
            for i in 0..<count {
                Self.chunk(i, &block)
                crc = block.withUnsafeBytes { crc32(crc, $0.baseAddress!.assumingMemoryBound(to: Bytef.self), uInt($0.count)) }
                try connection.send(Array("\(String(Self.chunkBytes, radix: 16));chunk-signature=\(signChunk(block))\r\n".utf8) + block
                                    + Array("\r\n".utf8))
            }
            try connection.send("0;chunk-signature=\(signChunk([]))\r\n\r\n")
        } else {
            let request = Self.signed("PUT", "/big/object", payloadHash: "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                                 headers: [("Content-Encoding", "aws-chunked"), ("Transfer-Encoding", "chunked"),
                                           ("x-amz-decoded-content-length", String(Self.size)), ("x-amz-trailer", "x-amz-checksum-crc32")])
            try connection.send(Self.head("PUT", "/big/object", request.headers))
            // The aws-chunked body inside HTTP chunked framing, as botocore sends it.
            func httpChunk(_ bytes: [UInt8]) throws { try connection.send(Array("\(String(bytes.count, radix: 16))\r\n".utf8) + bytes + Array("\r\n".utf8)) }
            for i in 0..<count {
                Self.chunk(i, &block)
                crc = block.withUnsafeBytes { crc32(crc, $0.baseAddress!.assumingMemoryBound(to: Bytef.self), uInt($0.count)) }
                try httpChunk(Array("\(String(Self.chunkBytes, radix: 16))\r\n".utf8) + block + Array("\r\n".utf8))
            }
            let c = UInt32(truncatingIfNeeded: crc)
            let trailer = Data([UInt8(c >> 24), UInt8(c >> 16 & 0xFF), UInt8(c >> 8 & 0xFF), UInt8(c & 0xFF)]).base64EncodedString()
            try httpChunk(Array("0\r\nx-amz-checksum-crc32:\(trailer)\r\n\r\n".utf8))
            try connection.send("0\r\n\r\n")
        }
        let put = try connection.readResponse()
        #expect(put.status == 200, "\(put.text)")

        // Read back through the plain API: the object's bytes, not the framing.
        let reader = try HTTPClientConnection(port: server.child.port, timeout: 300)
        defer { reader.close() }
        try reader.send("GET /store/big/object HTTP/1.1\r\nHost: x\r\n\r\n")
        var received = 0
        var readCRC = crc32(0, nil, 0)
        let get = try reader.readStreamingResponse { piece in
            readCRC = crc32(readCRC, piece.baseAddress!.assumingMemoryBound(to: Bytef.self), uInt(piece.count))
            received += piece.count
        }
        #expect(get.status == 200 && received == Self.size && readCRC == crc)
        let peak = try #require(server.child.peakRSSKiB())
        print("S3MemoryTests: larder peak RSS after a \(Self.size >> 20) MiB \(form) aws-chunked PUT and its GET: \(peak) KiB")
        #expect(peak < 64 * 1024, "peak RSS \(peak) KiB")
    }
}
