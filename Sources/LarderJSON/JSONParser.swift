extension JSONValue {
    /// Parses exactly one JSON value (RFC 8259, strict) from UTF-8 bytes.
    ///
    /// Accepts one value with optional surrounding whitespace and nothing else:
    /// no trailing commas, comments, `NaN`/`Infinity`, leading zeros, byte order
    /// mark, unescaped control characters, invalid UTF-8 or lone surrogate
    /// escapes. Escapes are decoded (surrogate pairs join into one scalar).
    /// Duplicate object keys keep the first position and the last value.
    ///
    /// The parser is iterative, so hostile nesting cannot exhaust the stack:
    /// input nesting arrays/objects deeper than `maxDepth` fails with
    /// ``JSONParseError/Kind/tooDeep`` as soon as the limit is crossed.
    ///
    /// - Parameters:
    ///   - bytes: The complete JSON text.
    ///   - maxDepth: Maximum nesting of arrays and objects (`[[1]]` has depth 2;
    ///     scalars have depth 0).
    /// - Throws: ``JSONParseError`` with the byte offset of the problem.
    public static func parse(
        _ bytes: UnsafeRawBufferPointer, maxDepth: Int = 512
    ) throws(JSONParseError) -> JSONValue {
        guard bytes.count > 0 else {
            throw JSONParseError(.unexpectedEndOfInput, at: 0, "empty input")
        }
        let result = bytes.withMemoryRebound(to: UInt8.self) { input -> Result<JSONValue, JSONParseError> in
            var parser = JSONParser(input, maxDepth: maxDepth)
            do throws(JSONParseError) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses exactly one JSON value from UTF-8 bytes; same rules as the `UnsafeRawBufferPointer` overload.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 512) throws(JSONParseError) -> JSONValue {
        let result = bytes.withUnsafeBytes { raw -> Result<JSONValue, JSONParseError> in
            do throws(JSONParseError) {
                return .success(try parse(raw, maxDepth: maxDepth))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses exactly one JSON value from a string's UTF-8; same rules as the `UnsafeRawBufferPointer` overload.
    public static func parse(_ text: String, maxDepth: Int = 512) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), maxDepth: maxDepth)
    }
}

/// A strict, iterative RFC 8259 parser over a byte buffer.
///
/// Open containers live on explicit stacks instead of the call stack, so depth
/// is bounded by `maxDepth` rather than by thread stack size. Arrays and
/// objects have separate stacks so appending to the innermost container
/// mutates it in place rather than copying an enum payload.
struct JSONParser {
    private let input: UnsafeBufferPointer<UInt8>
    private let maxDepth: Int
    private var pos = 0
    /// Reused buffer for strings that contain escapes.
    private var scratch: [UInt8] = []
    /// One entry per open container, innermost last: true for objects.
    private var openIsObject: [Bool] = []
    private var openArrays: [[JSONValue]] = []
    private var openObjects: [MemberTable] = []
    /// Key awaiting its value, one per open object.
    private var pendingKeys: [String] = []

    init(_ input: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.input = input
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        if input.count >= 3, input[0] == 0xEF, input[1] == 0xBB, input[2] == 0xBF {
            throw JSONParseError(.byteOrderMark, at: 0, "a UTF-8 byte order mark is not allowed")
        }
        let value = try parseValue()
        skipWhitespace()
        guard pos == input.count else {
            throw JSONParseError(.trailingData, at: pos, "unexpected \(describeByte(at: pos)) after the JSON value")
        }
        return value
    }

    // MARK: - Structure

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        descend: while true {
            skipWhitespace()
            guard pos < input.count else {
                throw JSONParseError(.unexpectedEndOfInput, at: pos, "unexpected end of input, expected a value")
            }
            var value: JSONValue
            switch input[pos] {
            case UInt8(ascii: "["):
                try checkDepth()
                pos += 1
                skipWhitespace()
                if pos < input.count && input[pos] == UInt8(ascii: "]") {
                    pos += 1
                    value = .array([])
                } else {
                    openIsObject.append(false)
                    openArrays.append([])
                    continue descend
                }
            case UInt8(ascii: "{"):
                try checkDepth()
                pos += 1
                skipWhitespace()
                if pos < input.count && input[pos] == UInt8(ascii: "}") {
                    pos += 1
                    value = .object([])
                } else {
                    let key = try parseMemberName()
                    openIsObject.append(true)
                    openObjects.append(MemberTable())
                    pendingKeys.append(key)
                    continue descend
                }
            case UInt8(ascii: "\""):
                pos += 1
                value = .string(try parseStringBody())
            case UInt8(ascii: "t"):
                try consumeLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try consumeLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try consumeLiteral("null")
                value = .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = .number(try parseNumber())
            default:
                throw JSONParseError(.unexpectedByte, at: pos, "unexpected \(describeByte(at: pos)), expected a value")
            }

            // `value` is complete: store it in its container, closing every
            // container that ends right after it.
            while let isObject = openIsObject.last {
                skipWhitespace()
                let next: UInt8? = pos < input.count ? input[pos] : nil
                if isObject {
                    openObjects[openObjects.count - 1].set(pendingKeys.removeLast(), value)
                    if next == UInt8(ascii: ",") {
                        pos += 1
                        skipWhitespace()
                        pendingKeys.append(try parseMemberName())
                        continue descend
                    }
                    guard next == UInt8(ascii: "}") else {
                        throw expectedAfterValue("'}'")
                    }
                    pos += 1
                    openIsObject.removeLast()
                    value = .object(openObjects.removeLast().finish())
                } else {
                    openArrays[openArrays.count - 1].append(value)
                    if next == UInt8(ascii: ",") {
                        pos += 1
                        continue descend
                    }
                    guard next == UInt8(ascii: "]") else {
                        throw expectedAfterValue("']'")
                    }
                    pos += 1
                    openIsObject.removeLast()
                    value = .array(openArrays.removeLast())
                }
            }
            return value
        }
    }

    /// Checked before opening a container, so the limit is enforced before any
    /// state for the too-deep level exists.
    private func checkDepth() throws(JSONParseError) {
        guard openIsObject.count < maxDepth else {
            throw JSONParseError(.tooDeep, at: pos, "nesting deeper than \(maxDepth) levels")
        }
    }

    private func expectedAfterValue(_ closer: String) -> JSONParseError {
        if pos >= input.count {
            return JSONParseError(.unexpectedEndOfInput, at: pos, "unexpected end of input, expected ',' or \(closer)")
        }
        return JSONParseError(.unexpectedByte, at: pos, "unexpected \(describeByte(at: pos)), expected ',' or \(closer)")
    }

    /// Parses `"name"` followed by `:`, starting at the opening quote.
    private mutating func parseMemberName() throws(JSONParseError) -> String {
        guard pos < input.count else {
            throw JSONParseError(.unexpectedEndOfInput, at: pos, "unexpected end of input, expected a member name")
        }
        guard input[pos] == UInt8(ascii: "\"") else {
            throw JSONParseError(.unexpectedByte, at: pos, "unexpected \(describeByte(at: pos)), expected a member name string")
        }
        pos += 1
        let name = try parseStringBody()
        skipWhitespace()
        guard pos < input.count, input[pos] == UInt8(ascii: ":") else {
            if pos >= input.count {
                throw JSONParseError(.unexpectedEndOfInput, at: pos, "unexpected end of input, expected ':'")
            }
            throw JSONParseError(.unexpectedByte, at: pos, "unexpected \(describeByte(at: pos)), expected ':'")
        }
        pos += 1
        return name
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while pos < input.count {
            switch input[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    // MARK: - Scalars

    private mutating func consumeLiteral(_ word: StaticString) throws(JSONParseError) {
        let length = word.utf8CodeUnitCount
        let expected = word.utf8Start
        for i in 0..<length where pos + i >= input.count || input[pos + i] != expected[i] {
            throw JSONParseError(.invalidLiteral, at: pos + i, "invalid literal, expected '\(word)'")
        }
        pos += length
    }

    private mutating func parseNumber() throws(JSONParseError) -> String {
        let start = pos
        pos = try NumberSyntax.scan(input, from: pos).end
        return String(decoding: UnsafeBufferPointer(rebasing: input[start..<pos]), as: UTF8.self)
    }

    /// Parses string content after the opening quote, through the closing quote.
    /// Strings without escapes are made straight from the input bytes.
    private mutating func parseStringBody() throws(JSONParseError) -> String {
        let openingQuote = pos - 1
        var runStart = pos
        var usesScratch = false
        while pos < input.count {
            let byte = input[pos]
            if byte == UInt8(ascii: "\"") {
                let result: String
                if usesScratch {
                    scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<pos]))
                    result = String(decoding: scratch, as: UTF8.self)
                } else {
                    result = String(decoding: UnsafeBufferPointer(rebasing: input[runStart..<pos]), as: UTF8.self)
                }
                pos += 1
                return result
            } else if byte == UInt8(ascii: "\\") {
                if !usesScratch {
                    scratch.removeAll(keepingCapacity: true)
                    usesScratch = true
                }
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<pos]))
                try decodeEscape()
                runStart = pos
            } else if byte < 0x20 {
                throw JSONParseError(
                    .unescapedControlCharacter, at: pos,
                    "control character \(describeByte(at: pos)) must be escaped in a string")
            } else if byte < 0x80 {
                pos += 1
            } else {
                try skipUTF8Scalar()
            }
        }
        throw JSONParseError(
            .unexpectedEndOfInput, at: pos, "unterminated string starting at byte offset \(openingQuote)")
    }

    /// Decodes the escape at `pos` (a backslash) into `scratch`.
    private mutating func decodeEscape() throws(JSONParseError) {
        let start = pos
        guard pos + 1 < input.count else {
            throw JSONParseError(.unexpectedEndOfInput, at: input.count, "unexpected end of input in escape")
        }
        let letter = input[pos + 1]
        pos += 2
        if let unescaped = JSONEscape.byte(for: letter) {
            scratch.append(unescaped)
            return
        }
        switch letter {
        case UInt8(ascii: "u"):
            var scalar = try readHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                // A high surrogate must be followed by an escaped low surrogate.
                guard pos + 1 < input.count, input[pos] == UInt8(ascii: "\\"), input[pos + 1] == UInt8(ascii: "u") else {
                    throw JSONParseError(.loneSurrogate, at: start, "high surrogate escape without a low surrogate")
                }
                pos += 2
                let low = try readHex4()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw JSONParseError(.loneSurrogate, at: start, "high surrogate escape without a low surrogate")
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw JSONParseError(.loneSurrogate, at: start, "low surrogate escape without a high surrogate")
            }
            appendUTF8(scalar)
        default:
            throw JSONParseError(.invalidEscape, at: start, "invalid escape \(describeByte(at: start + 1))")
        }
    }

    private mutating func readHex4() throws(JSONParseError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard pos < input.count else {
                throw JSONParseError(.unexpectedEndOfInput, at: pos, "unexpected end of input in \\u escape")
            }
            let byte = input[pos]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default:
                throw JSONParseError(.invalidEscape, at: pos, "expected a hex digit in \\u escape, found \(describeByte(at: pos))")
            }
            value = value << 4 | UInt32(digit)
            pos += 1
        }
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        JSONStringDecoder.appendUTF8(scalar, to: &scratch)
    }

    /// Validates one multi-byte UTF-8 scalar at `pos` and steps over it. Follows
    /// Unicode Table 3-7, so overlong forms, encoded surrogates and values
    /// above U+10FFFF are rejected.
    private mutating func skipUTF8Scalar() throws(JSONParseError) {
        let lead = input[pos]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default:
            throw JSONParseError(.invalidUTF8, at: pos, "invalid UTF-8 lead byte \(describeByte(at: pos))")
        }
        guard pos + length <= input.count else {
            throw JSONParseError(.invalidUTF8, at: pos, "truncated UTF-8 sequence")
        }
        guard (low...high).contains(input[pos + 1]) else {
            throw JSONParseError(.invalidUTF8, at: pos + 1, "invalid UTF-8 continuation byte \(describeByte(at: pos + 1))")
        }
        for i in 2..<length where !(0x80...0xBF).contains(input[pos + i]) {
            throw JSONParseError(.invalidUTF8, at: pos + i, "invalid UTF-8 continuation byte \(describeByte(at: pos + i))")
        }
        pos += length
    }

    // MARK: - Messages

    private func describeByte(at offset: Int) -> String {
        guard offset < input.count else { return "end of input" }
        let byte = input[offset]
        if byte >= 0x21 && byte < 0x7F {
            return "'\(Character(Unicode.Scalar(byte)))'"
        }
        let hex = String(byte, radix: 16, uppercase: true)
        return "byte 0x\(byte < 0x10 ? "0" : "")\(hex)"
    }
}
