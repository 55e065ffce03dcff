/// How a key goes into a URL path after `/store/`: every UTF-8 byte outside
/// `A-Za-z0-9-._~/` escaped as `%XX`, so NFC and NFD spellings stay distinct.
/// The server's links and every client use this one encoder.
public enum KeyPercentEncoding {
    public static func percentEncode(_ key: String) -> String { percentEncode(bytes: Array(key.utf8)) }

    public static func percentEncode(bytes: [UInt8]) -> String {
        var out = ""
        out.reserveCapacity(bytes.count)
        let hex = Array("0123456789ABCDEF")
        for b in bytes {
            switch b {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E, 0x2F:
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out.append("%"); out.append(hex[Int(b >> 4)]); out.append(hex[Int(b & 15)])
            }
        }
        return out
    }
}
