import LarderSupport

/// SigV4's URI encoding: every byte but the unreserved `A-Z a-z 0-9 - . _ ~`
/// as `%XX` with upper-case hex (`/` kept in a path, encoded in a query).
/// The canonical request is built from the decoded request re-encoded this
/// way, so a client that encodes a little differently (lower-case hex, a
/// `~` as `%7E`) still signs what the server checks.
enum AWSURIEncoding {
    static func encode<Bytes: Sequence>(_ bytes: Bytes, keepSlash: Bool) -> String where Bytes.Element == UInt8 {
        String(decoding: encodedBytes(bytes, keepSlash: keepSlash), as: UTF8.self)
    }

    /// `encode`'s bytes.
    static func encodedBytes<Bytes: Sequence>(_ bytes: Bytes, keepSlash: Bool) -> [UInt8] where Bytes.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount)
        for b in bytes {
            switch b {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E:
                out.append(b)
            case 0x2F where keepSlash:
                out.append(b)
            default:
                out.append(0x25)
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0x0F)])
            }
        }
        return out
    }

    private static let hex = Array("0123456789ABCDEF".utf8)

    /// `%XX` to bytes; a `%` without two hex digits after it stays as it is
    /// (S3 takes such a path literally rather than refusing it). `+` stays `+`.
    /// The shared decoder's lenient form, which never fails.
    static func decode(_ text: Substring) -> [UInt8] { PercentDecoding.decode(text, keepingMalformed: true)! }

    /// The same, of a path's or query's bytes.
    static func decode(_ bytes: Substring.UTF8View) -> [UInt8] { decode(Substring(bytes)) }

    static func decode(_ bytes: ArraySlice<UInt8>) -> [UInt8] { PercentDecoding.decode(bytes, keepingMalformed: true)! }
}
