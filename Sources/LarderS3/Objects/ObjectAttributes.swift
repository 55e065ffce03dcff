import FoundationEssentials
import LarderValueFile

/// What the S3 face keeps with an object, in its value's attributes
/// (`ValueMetadata.attributes`): the MD5 of its bytes (its ETag, with the
/// part count for a multipart object), the checksum it was uploaded with,
/// and the headers S3 gives back on GET and HEAD (`x-amz-meta-*`,
/// `Content-Encoding`, `Content-Disposition`, ...). A value written through
/// the plain API has none: the face then answers with the value's own ETag.
///
/// Encoded as (integers little-endian):
///
///     format(1)=1 | md5(16) | parts(4, 0: one PUT) | checksum(1, 0: none) digest(n)
///     | headers(2) { name(2+n) value(2+n) }...
///     [ 'P' | count(2) | { size(varint) }... | digest length(1, 0: none) | { digest }... ]
///
/// The last section, a multipart object's part sizes (and each part's
/// checksum, in the object's algorithm, when every part had one), is there
/// when it fits (`maxPartBytes`): GetObject's `partNumber` and
/// GetObjectAttributes' parts need it. Values written before it have none
/// (their decoder stopped after the headers).
///
/// The checksum's byte is its algorithm's code, with 0x80 set for a
/// composite checksum of a multipart object (older values never set it:
/// their checksums are full-object ones). An upload's record keeps the
/// algorithm and type the upload was created with there, digest zero.
///
/// Its length depends only on the headers and the checksum's algorithm, so
/// an upload reserves it with the digests zero and fills them in at the end.
struct ObjectAttributes: Equatable {
    var md5: [UInt8] = [UInt8](repeating: 0, count: 16)
    /// Parts of a multipart object; 0 for one written by one request.
    var parts: UInt32 = 0
    var checksum: (algorithm: ChecksumAlgorithm, digest: [UInt8])?
    /// What `checksum` is the digest of: the bytes, or the parts' digests.
    var checksumType: ChecksumType = .fullObject
    /// Names as S3 answers them: lower-case `x-amz-meta-*`, the content headers as named.
    var headers: [(name: String, value: String)] = []
    /// A multipart object's parts, in order: each one's size, and its
    /// checksum's digest when every part had one; nil when not kept.
    var partSizes: [UInt64]?
    var partDigests: [[UInt8]]?

    /// The most the part section may take of the attributes.
    static let maxPartBytes = 4096

    /// The headers kept with an object besides `Content-Type` (the value's own).
    static let contentHeaders = ["Content-Encoding", "Content-Disposition", "Content-Language", "Cache-Control", "Expires"]
    /// S3's limit on user metadata: names and values together.
    static let maxUserMetadataBytes = 2048

    /// The ETag S3 gives: quoted hex MD5, with `-<parts>` for a multipart object.
    var etag: String {
        // Hex by table: `String(format:)` a byte cost a GetObject more than the rest of its answer.
        "\"" + SignatureV4.hex(md5) + (parts > 0 ? "-\(parts)" : "") + "\""
    }

    static func == (a: ObjectAttributes, b: ObjectAttributes) -> Bool {
        a.md5 == b.md5 && a.parts == b.parts && a.checksum?.algorithm == b.checksum?.algorithm
            && a.checksum?.digest == b.checksum?.digest && a.checksumType == b.checksumType
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
            && a.partSizes == b.partSizes && a.partDigests == b.partDigests
    }

    /// The kept headers of a request: user metadata (`MetadataTooLarge`
    /// past S3's 2 KiB) and the content headers.
    static func headers(of request: (String) -> String?, all: [(name: String, value: String)]) throws(S3Error) -> [(name: String, value: String)] {
        var kept: [(name: String, value: String)] = []
        var userBytes = 0
        for (name, value) in all where name.utf8.count > 11 && Self.isUserMetadata(name) {
            let lower = name.lowercased()
            userBytes += lower.utf8.count - 11 + value.utf8.count
            kept.append((lower, value))
        }
        guard userBytes <= maxUserMetadataBytes else {
            throw S3Error(.badRequest, "MetadataTooLarge",
                          "Your metadata headers exceed the maximum allowed metadata size (\(maxUserMetadataBytes) bytes).")
        }
        for name in contentHeaders {
            if let value = request(name) { kept.append((name, value)) }
        }
        // All of it must fit the value's attributes (the digests' room included).
        let encoded = kept.reduce(64) { $0 + 4 + $1.name.utf8.count + $1.value.utf8.count }
        guard encoded <= ValueMetadata.maxAttributeBytes else {
            throw S3Error(.badRequest, "MetadataTooLarge",
                          "Your metadata and content headers exceed the \(ValueMetadata.maxAttributeBytes) bytes Larder keeps with an object.")
        }
        return kept
    }

    /// `x-amz-meta-…`, in any case (no lower-cased copy of every header's name).
    static func isUserMetadata(_ name: String) -> Bool {
        var prefix = "x-amz-meta-".utf8.makeIterator()
        for b in name.utf8 {
            guard let p = prefix.next() else { return true }
            guard b == p || (p >= 0x61 && p <= 0x7A && b == p - 0x20) else { return false }
        }
        return false
    }

    func encoded() -> [UInt8] {
        var out: [UInt8] = [1]
        out += md5
        Self.append(&out, UInt64(parts), bytes: 4)
        if let checksum {
            out.append(checksum.algorithm.code | (checksumType == .composite ? Self.compositeFlag : 0))
            out += checksum.digest
        } else {
            out.append(0)
        }
        Self.append(&out, UInt64(headers.count), bytes: 2)
        for (name, value) in headers {
            for field in [Array(name.utf8), Array(value.utf8)] {
                Self.append(&out, UInt64(field.count), bytes: 2)
                out += field
            }
        }
        // Only where it fits beside the headers (they may take most of the room).
        if let section = partSection(), out.count + section.count <= ValueMetadata.maxAttributeBytes { out += section }
        return out
    }

    /// The part section, or nil when there are no parts kept or they do not fit.
    private func partSection() -> [UInt8]? {
        guard let partSizes, !partSizes.isEmpty, partSizes.count <= 0xFFFF else { return nil }
        var out: [UInt8] = [Self.partTag]
        Self.append(&out, UInt64(partSizes.count), bytes: 2)
        for size in partSizes {
            var v = size
            while v >= 0x80 {
                out.append(UInt8(v & 0x7F) | 0x80)
                v >>= 7
            }
            out.append(UInt8(v))
        }
        let digests = partDigests.flatMap { $0.count == partSizes.count && Set($0.map(\.count)).count == 1 ? $0 : nil }
        out.append(UInt8(digests?.first?.count ?? 0))
        for digest in digests ?? [] { out += digest }
        return out.count <= Self.maxPartBytes ? out : nil
    }

    private static let partTag: UInt8 = 0x50

    /// nil for attributes that are not the S3 face's (or damaged).
    init?(decoding bytes: [UInt8]) {
        var p = 0
        func take(_ n: Int) -> ArraySlice<UInt8>? {
            guard p + n <= bytes.count else { return nil }
            defer { p += n }
            return bytes[p..<(p + n)]
        }
        func integer(_ n: Int) -> Int? {
            take(n).map { $0.reversed().reduce(0) { $0 << 8 | Int($1) } }
        }
        guard take(1)?.first == 1, let md5 = take(16), let parts = integer(4), let code = take(1)?.first else { return nil }
        self.md5 = Array(md5)
        self.parts = UInt32(parts)
        if code != 0 {
            guard let algorithm = ChecksumAlgorithm(code: code & ~Self.compositeFlag), let digest = take(algorithm.digestLength)
            else { return nil }
            checksum = (algorithm, Array(digest))
            checksumType = code & Self.compositeFlag != 0 ? .composite : .fullObject
        }
        guard let count = integer(2) else { return nil }
        for _ in 0..<count {
            guard let n = integer(2), let name = take(n), let m = integer(2), let value = take(m) else { return nil }
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        // Compared as a byte: an array literal here cost every GetObject an allocation.
        guard p < bytes.count, bytes[p] == Self.partTag else { return }
        p += 1
        guard let parts = integer(2) else { return }
        var sizes: [UInt64] = []
        for _ in 0..<parts {
            var size: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard let byte = take(1)?.first, shift < 64 else { return }
                size |= UInt64(byte & 0x7F) << shift
                shift += 7
                if byte & 0x80 == 0 { break }
            }
            sizes.append(size)
        }
        partSizes = sizes
        guard let length = take(1)?.first, length > 0 else { return }
        var digests: [[UInt8]] = []
        for _ in 0..<parts {
            guard let digest = take(Int(length)) else { return }
            digests.append(Array(digest))
        }
        partDigests = digests
    }

    init(headers: [(name: String, value: String)], checksum: ChecksumAlgorithm?, type: ChecksumType = .fullObject) {
        self.headers = headers
        if let checksum { self.checksum = (checksum, [UInt8](repeating: 0, count: checksum.digestLength)) }
        checksumType = type
    }

    /// The bit of the checksum's byte that marks a composite checksum.
    private static let compositeFlag: UInt8 = 0x80

    private static func append(_ out: inout [UInt8], _ value: UInt64, bytes: Int) {
        for i in 0..<bytes { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }
}

extension ValueMetadata {
    /// The S3 face's attributes of the value, if it has them.
    var s3Attributes: ObjectAttributes? { attributes.flatMap(ObjectAttributes.init(decoding:)) }

    /// The ETag the S3 face gives the value: S3's MD5 one when the face
    /// wrote it, the value's own otherwise.
    var s3ETag: String { s3Attributes?.etag ?? etag }
}

extension ObjectAttributes {
    /// What PutObject and UploadPart answer, as S3: the ETag, the checksum
    /// and the encryption asked for.
    var uploadAnswerHeaders: [(String, String)] {
        var out: [(String, String)] = [("ETag", etag)]
        if let checksum, let text = checksumText { out.append((checksum.algorithm.header, text)) }
        return out + ServerSideEncryption.echoed(headers)
    }

    /// The checksum as S3 answers it: base64, and for a composite one
    /// `-<parts>` after it.
    var checksumText: String? {
        guard let checksum else { return nil }
        let base64 = Data(checksum.digest).base64EncodedString()
        return checksumType == .composite ? base64 + "-\(parts)" : base64
    }

    /// The headers an answer about the object carries: its ETag, its kept
    /// headers (encryption's among them), and its checksum when asked for
    /// (`x-amz-checksum-mode: ENABLED`).
    func responseHeaders(checksumMode: Bool, etag: String? = nil) -> [(String, String)] {
        var out: [(String, String)] = [("ETag", etag ?? self.etag)]
        for (name, value) in headers {
            // Tags are answered by their count; GetObjectTagging gives them.
            if name == ObjectTagging.header {
                out.append((ObjectTagging.countHeader, String(ObjectTagging.of(headers).tags.count)))
            } else {
                out.append((name, value))
            }
        }
        if checksumMode, let checksum, let text = checksumText {
            out.append((checksum.algorithm.header, text))
            out.append(("x-amz-checksum-type", checksumType.rawValue))
        }
        return out
    }
}
