import LarderSupport
import Crypto
import FoundationEssentials

/// Takes the `aws-chunked` framing off a body as it streams in:
/// `hex-size[;chunk-signature=sig]\r\n` data `\r\n` … `0…\r\n`, trailer
/// lines (`x-amz-checksum-crc32:…\r\n`), and a blank line. Only the data
/// goes on, so what is stored is the object, never its framing. Holds no
/// more than one framing line (and one chunk's running SHA-256), however
/// large the chunks.
///
/// With a `ChunkSignatureChain` (a signed `STREAMING-AWS4-HMAC-SHA256-…`
/// body) each chunk's signature is checked as soon as its data is in, and
/// the trailer's (`x-amz-trailer-signature`) after the trailers: a bad one
/// throws `SignatureDoesNotMatch` before anything more is read, and the
/// caller drops what it wrote.
struct AWSChunkedDecoder {
    /// A framing line longer than this is refused (no client writes one).
    static let maxLineBytes = 4096
    static let trailerSignatureName = "x-amz-trailer-signature"

    private enum State {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailers
        case done
    }

    private var state = State.size
    private var line: [UInt8] = []
    /// The trailing headers, lower-case names, as sent.
    private(set) var trailers: [String: String] = [:]

    /// The signatures to check; nil: an unsigned body.
    private var chain: ChunkSignatureChain?
    /// The trailers are signed too (`…-PAYLOAD-TRAILER`).
    private let signedTrailer: Bool
    /// The signature the chunk being read claims, and its data's digest so far.
    private var claimed: String?
    private var chunkHash = SHA256()
    /// The trailer lines as signed: `name:value\n` each, in the order sent.
    private var trailerBytes: [UInt8] = []
    private var trailerSignature: String?
    /// `x-amz-decoded-content-length`: the data must add up to exactly it.
    private let expectedBytes: Int64?
    private(set) var decodedBytes: Int64 = 0

    /// `signatures`: the chain of a signed body; `signedTrailer`: its
    /// trailers carry a signature too; `expectedBytes`: the object's size
    /// as declared (`x-amz-decoded-content-length`).
    init(signatures: ChunkSignatureChain? = nil, signedTrailer: Bool = false, expectedBytes: Int64? = nil) {
        chain = signatures
        self.signedTrailer = signedTrailer
        self.expectedBytes = expectedBytes
    }

    /// The decoder of a PutObject body as `verified` says it is signed:
    /// its chunks' signatures checked when it is a signed stream.
    init(for verified: SigV4Authenticator.Verified, expectedBytes: Int64?) {
        self.init(signatures: verified.chunkSignatures, signedTrailer: verified.payload == .streamingSignedTrailer,
                  expectedBytes: expectedBytes)
    }

    /// Whether the whole body (last chunk and trailers) has been read.
    var isComplete: Bool { if case .done = state { true } else { false } }

    /// Decodes `bytes`, handing each run of object bytes to `emit`.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        var i = 0
        while i < bytes.count {
            switch state {
            case .data(let remaining):
                let n = min(remaining, bytes.count - i)
                let piece = UnsafeRawBufferPointer(rebasing: bytes[i..<(i + n)])
                decodedBytes += Int64(n)
                if let expectedBytes, decodedBytes > expectedBytes {
                    throw S3Error.incompleteBody("the aws-chunked body holds more than x-amz-decoded-content-length (\(expectedBytes)) bytes")
                }
                if chain != nil { chunkHash.update(bufferPointer: piece) }
                try emit(piece)
                i += n
                state = remaining - n == 0 ? .dataEnd : .data(remaining: remaining - n)
            case .done:
                throw S3Error.incompleteBody("bytes after the end of the aws-chunked body")
            case .size, .dataEnd, .trailers:
                let b = bytes[i]
                i += 1
                line.append(b)
                if line.count > Self.maxLineBytes { throw S3Error.incompleteBody("an aws-chunked framing line is too long") }
                if line.count >= 2, line[line.count - 2] == 0x0D, b == 0x0A {
                    line.removeLast(2)
                    try endLine()
                    line.removeAll(keepingCapacity: true)
                }
            }
        }
    }

    private mutating func endLine() throws {
        switch state {
        case .size:
            // The size ends at `;` (a chunk signature or extension follows).
            // Hex digits only (`Int(_:radix:)` alone would take a sign), at most 15: never negative.
            let digits = line.prefix { $0 != 0x3B }
            guard !digits.isEmpty, digits.count <= 15, digits.allSatisfy({ HexDigit.value($0) != nil }),
                  let size = Int(String(decoding: digits, as: UTF8.self), radix: 16) else {
                throw S3Error.incompleteBody("an aws-chunked chunk size is not hexadecimal")
            }
            if chain != nil {
                claimed = Self.chunkSignature(in: line[digits.endIndex...])
                guard claimed != nil else {
                    throw S3Error(.forbidden, "SignatureDoesNotMatch", "a chunk of a signed aws-chunked body has no chunk-signature")
                }
            }
            if size == 0 {
                try endChunk()
                if let expectedBytes, decodedBytes != expectedBytes {
                    throw S3Error.incompleteBody(
                        "the aws-chunked body holds \(decodedBytes) bytes; x-amz-decoded-content-length says \(expectedBytes)")
                }
                state = .trailers
            } else {
                state = .data(remaining: size)
            }
        case .dataEnd:
            guard line.isEmpty else { throw S3Error.incompleteBody("an aws-chunked chunk is longer than its size") }
            try endChunk()
            state = .size
        case .trailers:
            if line.isEmpty {
                try endTrailers()
                state = .done
                return
            }
            guard let colon = line.firstIndex(of: 0x3A) else {
                throw S3Error.incompleteBody("an aws-chunked trailer line has no ':'")
            }
            let name = String(decoding: line[..<colon], as: UTF8.self).trimmingWhitespace().lowercased()
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingWhitespace()
            if name == Self.trailerSignatureName {
                trailerSignature = value
            } else {
                trailers[name] = value
                trailerBytes += Array("\(name):\(value)\n".utf8)
            }
        case .data, .done:
            preconditionFailure("lines are read in framing states only")
        }
    }

    /// A chunk's data is all in: its signature is checked now, before the
    /// next chunk is read.
    private mutating func endChunk() throws {
        guard chain != nil, let claimed else { return }
        let digest = SignatureV4.hex(chunkHash.finalize())
        chunkHash = SHA256()
        try chain!.verifyChunk(dataHash: digest, signature: claimed)
        self.claimed = nil
    }

    private mutating func endTrailers() throws {
        guard chain != nil, signedTrailer else { return }
        guard let trailerSignature else {
            throw S3Error(.forbidden, "SignatureDoesNotMatch", "the signed aws-chunked body has no x-amz-trailer-signature")
        }
        try chain!.verifyTrailer(trailerBytes: trailerBytes, signature: trailerSignature)
    }

    /// The value of `chunk-signature=` among a size line's extensions (`;a=b;…`).
    private static func chunkSignature(in extensions: ArraySlice<UInt8>) -> String? {
        for item in extensions.split(separator: 0x3B) {
            let text = String(decoding: item, as: UTF8.self).trimmingWhitespace()
            if text.hasPrefix("chunk-signature=") { return String(text.dropFirst("chunk-signature=".count)) }
        }
        return nil
    }
}
