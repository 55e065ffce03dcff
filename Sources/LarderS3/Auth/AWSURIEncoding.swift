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
    static func decode(_ text: Substring) -> [UInt8] { decode(text.utf8) }

    /// The same, of bytes.
    static func decode<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == 0x25 {
                let h1 = bytes.index(after: i)
                if h1 < bytes.endIndex {
                    let h2 = bytes.index(after: h1)
                    if h2 < bytes.endIndex, let h = HexDigit.value(bytes[h1]), let l = HexDigit.value(bytes[h2]) {
                        out.append(h << 4 | l)
                        i = bytes.index(after: h2)
                        continue
                    }
                }
            }
            out.append(b)
            i = bytes.index(after: i)
        }
        return out
    }
}
