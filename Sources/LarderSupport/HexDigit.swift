/// Reads one ASCII hex digit: chunk sizes, percent-escapes (in targets,
/// keys and SigV4's canonical URIs) and host literals all spell numbers
/// with the same sixteen characters. Inlinable: the HTTP parser asks per byte.
public enum HexDigit {
    /// The digit's value, nil for any other byte.
    @inlinable @inline(__always)
    public static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }

    @inlinable
    public static func isDigit(_ c: UInt8) -> Bool { value(c) != nil }
}
