/// Finds the members of a JSON object text without building its values:
/// each member's name and the exact byte range of its raw value, in order.
///
/// It reads only the structure (where strings, containers and scalars end),
/// so a caller can keep a member's bytes verbatim, and it works on a prefix
/// of the text: a reader can learn where a large last member begins before
/// the rest has arrived. It does not validate values: parse each range with
/// `JSONValue.parse` (which rejects whatever the scanner let through).
public enum JSONObjectScanner {
    public struct Member: Sendable {
        /// The decoded name.
        public let name: String
        /// The raw value, from its first byte to its last (no whitespace).
        public let value: Range<Int>
    }

    public enum Result: Sendable {
        /// The object is complete; `end` is the offset just after its `}`.
        case complete([Member], end: Int)
        /// The text ends inside the object: the members complete so far, and
        /// the member whose value has begun but not ended (nil when the text
        /// ends before a value begins).
        case partial([Member], open: (name: String, valueStart: Int)?)
    }

    /// Scans the object that starts at the first non-whitespace byte.
    public static func scan(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> Result {
        var members: [Member] = []
        var pos = skipWhitespace(bytes, 0)
        guard pos < bytes.count else { return .partial([], open: nil) }
        guard bytes[pos] == UInt8(ascii: "{") else {
            throw JSONParseError(.unexpectedByte, at: pos, "expected '{' to begin an object")
        }
        pos = skipWhitespace(bytes, pos + 1)
        if pos < bytes.count && bytes[pos] == UInt8(ascii: "}") { return .complete([], end: pos + 1) }
        while true {
            guard pos < bytes.count else { return .partial(members, open: nil) }
            guard bytes[pos] == UInt8(ascii: "\"") else {
                throw JSONParseError(.unexpectedByte, at: pos, "expected a member name")
            }
            guard let nameEnd = stringEnd(bytes, pos) else { return .partial(members, open: nil) }
            let name: String
            switch try JSONValue.parse(UnsafeRawBufferPointer(rebasing: bytes[pos..<nameEnd])) {
            case .string(let s): name = s
            default: throw JSONParseError(.unexpectedByte, at: pos, "expected a member name")
            }
            pos = skipWhitespace(bytes, nameEnd)
            guard pos < bytes.count else { return .partial(members, open: nil) }
            guard bytes[pos] == UInt8(ascii: ":") else {
                throw JSONParseError(.unexpectedByte, at: pos, "expected ':' after a member name")
            }
            pos = skipWhitespace(bytes, pos + 1)
            guard pos < bytes.count else { return .partial(members, open: nil) }
            let valueStart = pos
            guard let valueEnd = try valueEnd(bytes, pos) else {
                return .partial(members, open: (name, valueStart))
            }
            members.append(Member(name: name, value: valueStart..<valueEnd))
            pos = skipWhitespace(bytes, valueEnd)
            guard pos < bytes.count else { return .partial(members, open: nil) }
            switch bytes[pos] {
            case UInt8(ascii: ","): pos = skipWhitespace(bytes, pos + 1)
            case UInt8(ascii: "}"): return .complete(members, end: pos + 1)
            default: throw JSONParseError(.unexpectedByte, at: pos, "expected ',' or '}' after a member")
            }
        }
    }

    public static func skipWhitespace(_ bytes: UnsafeRawBufferPointer, _ start: Int) -> Int {
        var pos = start
        while pos < bytes.count {
            switch bytes[pos] {
            case 0x20, 0x09, 0x0A, 0x0D: pos += 1
            default: return pos
            }
        }
        return pos
    }

    /// The offset after the string that starts (with its quote) at `start`; nil when it does not end in `bytes`.
    private static func stringEnd(_ bytes: UnsafeRawBufferPointer, _ start: Int) -> Int? {
        var pos = start + 1
        while pos < bytes.count {
            switch bytes[pos] {
            case UInt8(ascii: "\""): return pos + 1
            case UInt8(ascii: "\\"): pos += 2
            default: pos += 1
            }
        }
        return nil
    }

    /// The offset after the value that starts at `start`; nil when it does not end in `bytes`.
    private static func valueEnd(_ bytes: UnsafeRawBufferPointer, _ start: Int) throws(JSONParseError) -> Int? {
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return stringEnd(bytes, start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var pos = start
            while pos < bytes.count {
                switch bytes[pos] {
                case UInt8(ascii: "\""):
                    guard let end = stringEnd(bytes, pos) else { return nil }
                    pos = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return pos + 1 }
                default:
                    break
                }
                pos += 1
            }
            return nil
        case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ":"):
            throw JSONParseError(.unexpectedByte, at: start, "expected a value")
        default:
            // A number or a literal: it ends at the next delimiter.
            var pos = start
            while pos < bytes.count {
                switch bytes[pos] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D: return pos
                default: pos += 1
                }
            }
            return nil
        }
    }
}
