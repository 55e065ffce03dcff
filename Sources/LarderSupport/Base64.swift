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
        let count = encodedCount(input.count)
        guard count > 0 else { return }
        // Written through pointers: per-element Array calls cost ~100x more
        // in debug builds, where the tests run.
        output += [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
            alphabet.withUnsafeBufferPointer { a in
                let o = out.baseAddress!
                let i = input.baseAddress!.assumingMemoryBound(to: UInt8.self)
                let whole = input.count / 3
                for g in 0..<whole {
                    let v = UInt32(i[3 * g]) << 16 | UInt32(i[3 * g + 1]) << 8 | UInt32(i[3 * g + 2])
                    o[4 * g] = a[Int(v >> 18)]
                    o[4 * g + 1] = a[Int(v >> 12 & 0x3F)]
                    o[4 * g + 2] = a[Int(v >> 6 & 0x3F)]
                    o[4 * g + 3] = a[Int(v & 0x3F)]
                }
                let rest = input.count - 3 * whole
                if rest > 0 {
                    let v = UInt32(i[3 * whole]) << 16 | (rest == 2 ? UInt32(i[3 * whole + 1]) << 8 : 0)
                    let at = 4 * whole
                    o[at] = a[Int(v >> 18)]
                    o[at + 1] = a[Int(v >> 12 & 0x3F)]
                    o[at + 2] = rest == 2 ? a[Int(v >> 6 & 0x3F)] : UInt8(ascii: "=")
                    o[at + 3] = UInt8(ascii: "=")
                }
            }
            initialized = count
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
            guard input.count > 0 else { return }
            var failure: DecodingError?
            // Whole groups go straight into the output through pointers (see `encode`).
            let capacity = (filled + input.count) / 4 * 3
            var state = (quad: quad, filled: filled, padding: padding, read: read)
            output += [UInt8](unsafeUninitializedCapacity: capacity) { out, initialized in
                Base64.values.withUnsafeBufferPointer { table in
                    var o = 0
                    let bytes = input.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    for k in 0..<input.count {
                        let c = bytes[k]
                        defer { state.read += 1 }
                        if state.padding > 0 {
                            // Only the rest of the padding may follow a '='.
                            guard c == UInt8(ascii: "="), state.filled < 4 else {
                                failure = DecodingError(description: "invalid base64 at character \(state.read): data after the padding", offset: state.read)
                                break
                            }
                            state.padding += 1
                            state.filled += 1
                            continue
                        }
                        let v = table[Int(c)]
                        if v == 0xFF {
                            guard c == UInt8(ascii: "="), state.filled >= 2 else {
                                let why = c == UInt8(ascii: "=") ? "padding too early" : "'\(Character(Unicode.Scalar(c)))' is not a base64 character"
                                failure = DecodingError(description: "invalid base64 at character \(state.read): \(why)", offset: state.read)
                                break
                            }
                            state.padding = 1
                            state.filled += 1
                            continue
                        }
                        state.quad = state.quad << 6 | UInt32(v)
                        state.filled += 1
                        if state.filled == 4 {
                            out[o] = UInt8(state.quad >> 16)
                            out[o + 1] = UInt8(state.quad >> 8 & 0xFF)
                            out[o + 2] = UInt8(state.quad & 0xFF)
                            o += 3
                            state.quad = 0
                            state.filled = 0
                        }
                    }
                    initialized = o
                }
            }
            (quad, filled, padding, read) = state
            if let failure { throw failure }
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
