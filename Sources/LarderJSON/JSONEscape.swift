/// The one-letter escapes of a JSON string (RFC 8259 section 7), shared by
/// the parser and the incremental string decoder.
enum JSONEscape {
    /// The byte `\letter` stands for; nil for `u` (four hex digits follow)
    /// and for letters that are no escape.
    @inline(__always)
    static func byte(for letter: UInt8) -> UInt8? {
        switch letter {
        case UInt8(ascii: "\""): 0x22
        case UInt8(ascii: "\\"): 0x5C
        case UInt8(ascii: "/"): 0x2F
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
    }
}
