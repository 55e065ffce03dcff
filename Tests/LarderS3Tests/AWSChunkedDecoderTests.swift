import Foundation
@testable import LarderS3
import LarderTestSupport
import Testing

/// The aws-chunked framing comes off whatever the pieces it arrives in.
@Suite(.blockingLane) struct AWSChunkedDecoderTests {
    static let framed = Array("5\r\nhello\r\n6;chunk-signature=abc\r\n world\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n".utf8)

    func decode(_ body: [UInt8], pieceSize: Int) throws -> (bytes: [UInt8], decoder: AWSChunkedDecoder) {
        var decoder = AWSChunkedDecoder()
        var out: [UInt8] = []
        var i = 0
        while i < body.count {
            let piece = Array(body[i..<min(body.count, i + pieceSize)])
            try piece.withUnsafeBytes { try decoder.feed($0) { out.append(contentsOf: $0) } }
            i += pieceSize
        }
        return (out, decoder)
    }

    @Test(arguments: [1, 2, 3, 7, 1000])
    func decodesInAnyPieces(_ size: Int) throws {
        let (bytes, decoder) = try decode(Self.framed, pieceSize: size)
        #expect(String(decoding: bytes, as: UTF8.self) == "hello world")
        #expect(decoder.isComplete)
        #expect(decoder.trailers["x-amz-checksum-crc32"] == "NhCmhg==")
    }

    @Test func anUnfinishedBodyIsNotComplete() throws {
        let (_, decoder) = try decode(Array(Self.framed.prefix(20)), pieceSize: 4)
        #expect(!decoder.isComplete)
    }

    @Test func badFramingIsRefused() {
        #expect(throws: S3Error.self) { try decode(Array("zz\r\nhello\r\n".utf8), pieceSize: 100) }
        #expect(throws: S3Error.self) { try decode(Array("2\r\nhello\r\n".utf8), pieceSize: 100) }
    }

    @Test func crc32TrailerIsChecked() throws {
        var checks = try BodyChecks(payload: .streamingUnsignedTrailer, checksumHeader: nil, trailerChecksum: .crc32, contentMD5: nil)
        Array("hello".utf8).withUnsafeBytes { checks.update($0) }
        let digests = try checks.finish(trailers: ["x-amz-checksum-crc32": "NhCmhg=="]).get()
        #expect(digests.checksum?.digest == [0x36, 0x10, 0xA6, 0x86])
        // MD5("hello"), the object's ETag.
        #expect(digests.md5.map { String(format: "%02x", $0) }.joined() == "5d41402abc4b2a76b9719d911017c592")
        guard case .failure(let error) = checks.finish(trailers: ["x-amz-checksum-crc32": "AAAAAA=="]) else {
            Issue.record("a wrong CRC32 trailer passed")
            return
        }
        #expect(error.code == "BadDigest")
    }
}
