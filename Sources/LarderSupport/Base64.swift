/// Base64 (RFC 4648 section 4, standard alphabet, padded), in pieces: a
/// value of any size is encoded 3n bytes at a time and decoded as its text
/// arrives, so neither side holds more than a piece.
public enum Base64 {
    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// 0...63 for an alphabet byte, 0xFF for any other.
    static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    /// Characters of the encoding of `count` bytes.
    public static func encodedCount(_ count: Int) -> Int { (count + 2) / 3 * 4 }

    /// Appends the encoding of `input`. Pieces of a longer value must be
    /// multiples of 3 bytes (all but the last): only the end is padded.
    public static func encode(_ input: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        let whole = input.count / 3 * 3
        let start = output.count
        output.append(contentsOf: repeatElement(UInt8(ascii: "="), count: encodedCount(input.count)))
        output.withUnsafeMutableBufferPointer { out in
            alphabet.withUnsafeBufferPointer { a in
                var o = start
                var i = 0
                while i < whole {
                    let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                    out[o] = a[Int(v >> 18)]
                    out[o + 1] = a[Int(v >> 12 & 0x3F)]
                    out[o + 2] = a[Int(v >> 6 & 0x3F)]
                    out[o + 3] = a[Int(v & 0x3F)]
                    o += 4
                    i += 3
                }
                let rest = input.count - whole
                if rest > 0 {
                    let v = UInt32(input[i]) << 16 | (rest == 2 ? UInt32(input[i + 1]) << 8 : 0)
                    out[o] = a[Int(v >> 18)]
                    out[o + 1] = a[Int(v >> 12 & 0x3F)]
                    if rest == 2 { out[o + 2] = a[Int(v >> 6 & 0x3F)] }
                }
            }
        }
    }

    public static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(encodedCount(bytes.count))
        bytes.withUnsafeBytes { encode($0, into: &out) }
        return out
    }

    public struct DecodingError: Error, CustomStringConvertible {
        public let description: String
        /// Characters read before the problem.
        public let offset: Int
    }

    /// Decodes text that arrives in pieces, cut anywhere. Strict: only the
    /// alphabet, no whitespace, padding only at the end and only as needed,
    /// and the bits padding leaves over must be zero — so one value has one
    /// encoding.
    public struct Decoder {
        private var quad: UInt32 = 0
        private var filled = 0
        private var padding = 0
        private var read = 0

        public init() {}

        /// Decodes a piece, appending the bytes to `output`.
        public mutating func decode(_ input: UnsafeRawBufferPointer, into output: inout [UInt8]) throws(DecodingError) {
            let table = Base64.values
            for c in input {
                defer { read += 1 }
                if padding > 0 {
                    // Only the rest of the padding may follow a '='.
                    guard c == UInt8(ascii: "="), filled < 4 else { throw fail("data after the padding") }
                    padding += 1
                    filled += 1
                    continue
                }
                let v = table[Int(c)]
                if v == 0xFF {
                    guard c == UInt8(ascii: "=") else { throw fail("'\(Character(Unicode.Scalar(c)))' is not a base64 character") }
                    guard filled >= 2 else { throw fail("padding too early") }
                    padding = 1
                    filled += 1
                    continue
                }
                quad = quad << 6 | UInt32(v)
                filled += 1
                if filled == 4 {
                    output.append(UInt8(quad >> 16))
                    output.append(UInt8(quad >> 8 & 0xFF))
                    output.append(UInt8(quad & 0xFF))
                    quad = 0
                    filled = 0
                }
            }
        }

        /// The text is complete: it must end on a whole group.
        public mutating func finish(into output: inout [UInt8]) throws(DecodingError) {
            guard padding > 0 else {
                guard filled == 0 else { throw fail("the text ends inside a group (its length is not a multiple of 4)") }
                return
            }
            guard filled == 4 else { throw fail("the padding is incomplete") }
            // 2 data characters carry 1 byte, 3 carry 2; the spare bits are zero.
            let dataCharacters = 4 - padding
            let bits = quad << UInt32(6 * padding)
            guard (dataCharacters == 2 ? bits & 0xFFFF : bits & 0xFF) == 0 else { throw fail("non-zero bits in the padding") }
            output.append(UInt8(bits >> 16))
            if dataCharacters == 3 { output.append(UInt8(bits >> 8 & 0xFF)) }
            quad = 0
            filled = 0
            padding = 0
        }

        private func fail(_ why: String) -> DecodingError {
            DecodingError(description: "invalid base64 at character \(read): \(why)", offset: read)
        }
    }

    /// Decodes a whole text.
    public static func decode(_ text: UnsafeRawBufferPointer) throws(DecodingError) -> [UInt8] {
        var decoder = Decoder()
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3)
        try decoder.decode(text, into: &out)
        try decoder.finish(into: &out)
        return out
    }
}
