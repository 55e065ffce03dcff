import Crypto
@testable import LarderS3
import LarderTestSupport
import Testing

/// Signed aws-chunked bodies against AWS's published example ("Signature
/// Calculations for the Authorization Header: Transferring Payload in
/// Multiple Chunks": a 66560-byte object of `a`, 64 KiB chunks), then the
/// decoder verifying such a body whatever pieces it arrives in, and
/// refusing one spoiled anywhere.
@Suite(.blockingLane) struct ChunkSignatureTests {
    static let amzDate = "20130524T000000Z"
    static let scope = SignatureV4Tests.scope
    static let seed = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
    /// The signatures of the 65536-byte chunk, the 1024-byte chunk and the final empty one.
    static let chunkSignatures = [
        "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
        "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
        "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
    ]
    static let chunks = [[UInt8](repeating: 0x61, count: 65_536), [UInt8](repeating: 0x61, count: 1024), []]

    static var key: SymmetricKey { SignatureV4.signingKey(secret: SignatureV4Tests.secret, scope: scope) }

    static func chain() -> ChunkSignatureChain {
        ChunkSignatureChain(key: key, amzDate: amzDate, scope: scope, seedSignature: seed)
    }

    @Test func theSeedIsTheRequestsSignature() {
        let request = SignatureV4.Request(
            method: "PUT", path: "/examplebucket/chunkObject.txt", query: nil,
            headers: [("Host", "s3.amazonaws.com"), ("x-amz-date", Self.amzDate), ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
                      ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"), ("Content-Encoding", "aws-chunked"),
                      ("x-amz-decoded-content-length", "66560"), ("Content-Length", "66824")],
            signedHeaders: ["content-encoding", "content-length", "host", "x-amz-content-sha256", "x-amz-date",
                            "x-amz-decoded-content-length", "x-amz-storage-class"],
            payloadHash: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
        #expect(SignatureV4.sign(request, secret: SignatureV4Tests.secret, amzDate: Self.amzDate, scope: Self.scope) == Self.seed)
    }

    @Test func eachChunkSignsAsPublished() throws {
        var chain = Self.chain()
        for (chunk, signature) in zip(Self.chunks, Self.chunkSignatures) {
            let hash = SignatureV4.hex(SHA256.hash(data: chunk))
            #expect(chain.expectedChunkSignature(dataHash: hash) == signature)
            try chain.verifyChunk(dataHash: hash, signature: signature)
        }
        // The chain moved on: the first signature is no longer the next one.
        #expect(throws: S3Error.self) {
            try chain.verifyChunk(dataHash: SignatureV4.emptyPayloadHash, signature: Self.chunkSignatures[2])
        }
    }

    /// AWS's example body, as sent (66824 bytes, its Content-Length).
    static func framed(signatures: [String] = chunkSignatures) -> [UInt8] {
        var body: [UInt8] = []
        for (chunk, signature) in zip(chunks, signatures) {
            body += Array("\(String(chunk.count, radix: 16));chunk-signature=\(signature)\r\n".utf8)
            if !chunk.isEmpty { body += chunk + Array("\r\n".utf8) }
        }
        return body + Array("\r\n".utf8)
    }

    func decode(_ body: [UInt8], pieceSize: Int, decoder: AWSChunkedDecoder) throws -> (bytes: [UInt8], decoder: AWSChunkedDecoder) {
        var decoder = decoder
        var out: [UInt8] = []
        var i = 0
        while i < body.count {
            let piece = Array(body[i..<min(body.count, i + pieceSize)])
            try piece.withUnsafeBytes { try decoder.feed($0) { out.append(contentsOf: $0) } }
            i += pieceSize
        }
        return (out, decoder)
    }

    static func signedDecoder(expectedBytes: Int64? = 66_560) -> AWSChunkedDecoder {
        AWSChunkedDecoder(signatures: chain(), expectedBytes: expectedBytes)
    }

    /// The error code decoding `body` throws; nil when it decodes.
    func code(_ body: [UInt8], _ decoder: AWSChunkedDecoder = signedDecoder()) -> String? {
        do {
            let (_, decoder) = try decode(body, pieceSize: 4096, decoder: decoder)
            return decoder.isComplete ? nil : "incomplete"
        } catch let error as S3Error {
            return error.code
        } catch {
            return "\(error)"
        }
    }

    @Test(arguments: [1, 7, 1000, 65_536, 70_000])
    func theExampleBodyDecodesInAnyPieces(_ size: Int) throws {
        let body = Self.framed()
        #expect(body.count == 66_824)
        let (bytes, decoder) = try decode(body, pieceSize: size, decoder: Self.signedDecoder())
        #expect(bytes == [UInt8](repeating: 0x61, count: 66_560))
        #expect(decoder.isComplete)
    }

    @Test func aSpoiledBodyIsRefused() {
        var body = Self.framed()
        #expect(code(body) == nil)
        // One byte of data changed.
        body[100] = 0x62
        #expect(code(body) == "SignatureDoesNotMatch")
        // A chunk's signature changed, or missing.
        var signatures = Self.chunkSignatures
        signatures[1] = String(repeating: "0", count: 64)
        #expect(code(Self.framed(signatures: signatures)) == "SignatureDoesNotMatch")
        let unsigned = Array(String(decoding: Self.framed(), as: UTF8.self)
            .replacingOccurrences(of: ";chunk-signature=" + Self.chunkSignatures[0], with: "").utf8)
        #expect(code(unsigned) == "SignatureDoesNotMatch")
        // Signed with another secret (so another seed).
        let other = ChunkSignatureChain(key: SignatureV4.signingKey(secret: "another", scope: Self.scope), amzDate: Self.amzDate,
                                        scope: Self.scope, seedSignature: Self.seed)
        #expect(code(Self.framed(), AWSChunkedDecoder(signatures: other, expectedBytes: 66_560)) == "SignatureDoesNotMatch")
    }

    @Test func theDeclaredSizeMustBeTheBodys() {
        #expect(code(Self.framed(), Self.signedDecoder(expectedBytes: 66_561)) == "IncompleteBody")
        #expect(code(Self.framed(), Self.signedDecoder(expectedBytes: 66_559)) == "IncompleteBody")
    }

    @Test func theFirstBadChunkStopsTheBodyBeforeTheNext() throws {
        // The 403 comes as soon as the first chunk is in: nothing after it is read.
        var body = Self.framed()
        body[200] = 0x62
        var decoder = Self.signedDecoder()
        var emitted = 0
        let firstChunkEnd = 88 + 65_536 + 2
        #expect(throws: S3Error.self) {
            try Array(body[..<firstChunkEnd]).withUnsafeBytes { try decoder.feed($0) { emitted += $0.count } }
        }
        #expect(emitted == 65_536)
    }

    @Test func signedTrailersAreChecked() throws {
        // A one-chunk body with a CRC32 trailer, signed from the spec with HMAC here.
        let data = Array("hello".utf8)
        let key = Self.key
        func hmac(_ text: String) -> String {
            SignatureV4.hex(HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: key))
        }
        func sha(_ bytes: [UInt8]) -> String { SignatureV4.hex(SHA256.hash(data: bytes)) }
        let prefix = "AWS4-HMAC-SHA256-PAYLOAD\n\(Self.amzDate)\n\(Self.scope.string)\n"
        let first = hmac(prefix + Self.seed + "\n" + SignatureV4.emptyPayloadHash + "\n" + sha(data))
        let last = hmac(prefix + first + "\n" + SignatureV4.emptyPayloadHash + "\n" + SignatureV4.emptyPayloadHash)
        func body(checksum: String, signedChecksum: String? = nil, signature: String? = nil) -> [UInt8] {
            let trailerSignature = signature ?? hmac("AWS4-HMAC-SHA256-TRAILER\n\(Self.amzDate)\n\(Self.scope.string)\n\(last)\n"
                + sha(Array("x-amz-checksum-crc32:\(signedChecksum ?? checksum)\n".utf8)))
            return Array(("5;chunk-signature=\(first)\r\nhello\r\n0;chunk-signature=\(last)\r\n"
                + "x-amz-checksum-crc32:\(checksum)\r\nx-amz-trailer-signature:\(trailerSignature)\r\n\r\n").utf8)
        }
        let decoder = AWSChunkedDecoder(signatures: Self.chain(), signedTrailer: true, expectedBytes: 5)
        let (bytes, done) = try decode(body(checksum: "NhCmhg=="), pieceSize: 3, decoder: decoder)
        #expect(bytes == data)
        #expect(done.isComplete)
        #expect(done.trailers == ["x-amz-checksum-crc32": "NhCmhg=="])
        // A trailer changed after signing, a wrong trailer signature, none at all.
        #expect(code(body(checksum: "AAAAAA==", signedChecksum: "NhCmhg=="), decoder) == "SignatureDoesNotMatch")
        #expect(code(body(checksum: "NhCmhg==", signature: String(repeating: "1", count: 64)), decoder) == "SignatureDoesNotMatch")
        let stripped = Array(String(decoding: body(checksum: "NhCmhg=="), as: UTF8.self)
            .split(separator: "\r\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("x-amz-trailer-signature") }.joined(separator: "\r\n").utf8)
        #expect(code(stripped, decoder) == "SignatureDoesNotMatch")
    }
}
