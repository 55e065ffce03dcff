/// Decodes the content of one JSON string that arrives in pieces — a value
/// too large to hold, streamed to disk as it is read. The bytes after the
/// opening quote go in, the decoded UTF-8 comes out, up to the closing quote.
///
/// Same rules as the parser, wherever a piece ends (inside an escape, a
/// `\uXXXX`, a surrogate pair or a UTF-8 sequence): escapes are decoded,
/// surrogate pairs joined, and raw control bytes, invalid UTF-8 and lone
/// surrogates rejected. Error offsets count from the first byte after the
/// opening quote.
public struct JSONStringDecoder {
    private enum State {
        /// Between scalars.
        case text
        /// Inside a multi-byte UTF-8 scalar: continuation bytes still
        /// expected, and the range the next one must lie in (Unicode Table 3-7).
        case utf8(remaining: Int, low: UInt8, high: UInt8)
        /// After a backslash.
        case escape
        /// In the hex digits of `\u`; `high` is a high surrogate waiting for
        /// the low half this escape must be.
        case hex(value: UInt32, digits: Int, high: UInt32?)
        /// After a high surrogate: its low half's `\` and `u` must follow.
        case lowBackslash(high: UInt32)
        case lowU(high: UInt32)
        /// The closing quote was read.
        case ended
    }

    private var state = State.text
    /// Bytes of content read so far (the position errors are reported at).
    public private(set) var consumed = 0

    public init() {}

    /// Whether the closing quote has been read.
    public var isEnded: Bool {
        if case .ended = state { return true }
        return false
    }

    /// Decodes from `input`, appending the string's bytes to `output`.
    /// Returns how many input bytes belong to the string: all of them until
    /// the closing quote, which is the last byte counted.
    public mutating func decode(_ input: UnsafeRawBufferPointer, into output: inout [UInt8]) throws(JSONParseError) -> Int {
        var i = 0
        let count = input.count
        defer { consumed += i }
        guard count > 0 else { return 0 }
        // Through a pointer: buffer subscripts are calls in debug builds.
        let p = input.baseAddress!.assumingMemoryBound(to: UInt8.self)
        while i < count {
            let byte = p[i]
            switch state {
            case .ended:
                return i
            case .text:
                // The common case, in bulk: a run of printable ASCII.
                var run = i
                while run < count {
                    let b = p[run]
                    if b < 0x20 || b >= 0x80 || b == 0x22 || b == 0x5C { break }
                    run += 1
                }
                if run > i {
                    output.append(contentsOf: UnsafeBufferPointer(start: p + i, count: run - i))
                    i = run
                    continue
                }
                switch byte {
                case 0x22:
                    state = .ended
                    i += 1
                    return i
                case 0x5C:
                    state = .escape
                case ..<0x20:
                    throw JSONParseError(.unescapedControlCharacter, at: consumed + i,
                                         "control character 0x\(String(byte, radix: 16)) must be escaped in a string")
                default:
                    output.append(byte)
                    switch byte {
                    case 0xC2...0xDF: state = .utf8(remaining: 1, low: 0x80, high: 0xBF)
                    case 0xE0: state = .utf8(remaining: 2, low: 0xA0, high: 0xBF)
                    case 0xE1...0xEC, 0xEE...0xEF: state = .utf8(remaining: 2, low: 0x80, high: 0xBF)
                    case 0xED: state = .utf8(remaining: 2, low: 0x80, high: 0x9F)
                    case 0xF0: state = .utf8(remaining: 3, low: 0x90, high: 0xBF)
                    case 0xF1...0xF3: state = .utf8(remaining: 3, low: 0x80, high: 0xBF)
                    case 0xF4: state = .utf8(remaining: 3, low: 0x80, high: 0x8F)
                    default:
                        throw JSONParseError(.invalidUTF8, at: consumed + i, "invalid UTF-8 lead byte 0x\(String(byte, radix: 16))")
                    }
                }
            case .utf8(let remaining, let low, let high):
                guard byte >= low && byte <= high else {
                    throw JSONParseError(.invalidUTF8, at: consumed + i, "invalid UTF-8 continuation byte 0x\(String(byte, radix: 16))")
                }
                output.append(byte)
                state = remaining == 1 ? .text : .utf8(remaining: remaining - 1, low: 0x80, high: 0xBF)
            case .escape:
                state = .text
                if let unescaped = JSONEscape.byte(for: byte) {
                    output.append(unescaped)
                } else if byte == UInt8(ascii: "u") {
                    state = .hex(value: 0, digits: 0, high: nil)
                } else {
                    throw JSONParseError(.invalidEscape, at: consumed + i, "invalid escape '\\\(Character(Unicode.Scalar(byte)))'")
                }
            case .hex(let value, let digits, let high):
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default:
                    throw JSONParseError(.invalidEscape, at: consumed + i, "expected a hex digit in \\u escape")
                }
                let scalar = value << 4 | digit
                guard digits == 3 else {
                    state = .hex(value: scalar, digits: digits + 1, high: high)
                    break
                }
                if let high {
                    guard (0xDC00...0xDFFF).contains(scalar) else {
                        throw JSONParseError(.loneSurrogate, at: consumed + i, "high surrogate escape without a low surrogate")
                    }
                    Self.appendUTF8(0x10000 + ((high - 0xD800) << 10) + (scalar - 0xDC00), to: &output)
                    state = .text
                } else if (0xD800...0xDBFF).contains(scalar) {
                    state = .lowBackslash(high: scalar)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw JSONParseError(.loneSurrogate, at: consumed + i, "low surrogate escape without a high surrogate")
                } else {
                    Self.appendUTF8(scalar, to: &output)
                    state = .text
                }
            case .lowBackslash(let high):
                guard byte == 0x5C else {
                    throw JSONParseError(.loneSurrogate, at: consumed + i, "high surrogate escape without a low surrogate")
                }
                state = .lowU(high: high)
            case .lowU(let high):
                guard byte == UInt8(ascii: "u") else {
                    throw JSONParseError(.loneSurrogate, at: consumed + i, "high surrogate escape without a low surrogate")
                }
                state = .hex(value: 0, digits: 0, high: high)
            }
            i += 1
        }
        return i
    }

    /// The UTF-8 bytes of a scalar (the parser's escapes use it too).
    static func appendUTF8(_ scalar: UInt32, to output: inout [UInt8]) {
        switch scalar {
        case ..<0x80:
            output.append(UInt8(scalar))
        case ..<0x800:
            output.append(UInt8(0xC0 | scalar >> 6))
            output.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            output.append(UInt8(0xE0 | scalar >> 12))
            output.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            output.append(UInt8(0x80 | scalar & 0x3F))
        default:
            output.append(UInt8(0xF0 | scalar >> 18))
            output.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            output.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            output.append(UInt8(0x80 | scalar & 0x3F))
        }
    }
}
