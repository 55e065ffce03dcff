import Testing
import LarderJSON

@Suite("Parsing")
struct ParseTests {
    @Test func parsesAllKinds() throws {
        let value = try json(#" {"n":null,"t":true,"f":false,"i":-12,"d":1.5e-3,"s":"x","a":[1,[]],"o":{}} "#)
        #expect(value == .object([
            (key: "n", value: .null),
            (key: "t", value: .bool(true)),
            (key: "f", value: .bool(false)),
            (key: "i", value: .number("-12")),
            (key: "d", value: .number("1.5e-3")),
            (key: "s", value: .string("x")),
            (key: "a", value: .array([.number("1"), .array([])])),
            (key: "o", value: .object([])),
        ]))
    }

    @Test func keepsExactNumberText() throws {
        for text in ["0", "-0", "1.50", "1E+2", "123456789012345678901234567890", "1e400", "-0.000e-0"] {
            #expect(try json(text) == .number(text))
            #expect(compact(try json(text)) == text)
        }
    }

    @Test func decodesEscapes() throws {
        #expect(try json(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{8}\u{C}\n\r\t"))
        #expect(try json(#""\u00e9\u00E9\u0000""#) == .string("éé\u{0}"))
        #expect(try json(#""\uD83D\uDE00""#) == .string("😀"))
        #expect(try json(#""a\u2028b""#) == .string("a\u{2028}b"))
    }

    @Test func acceptsRawUTF8() throws {
        #expect(try json("\"é中😀\"") == .string("é中😀"))
    }

    @Test func duplicateMemberReplacesEarlierValueInPlace() throws {
        let value = try json(#"{"a":1,"b":2,"a":3}"#)
        #expect(compact(value) == #"{"a":3,"b":2}"#)
    }

    @Test func duplicatesInLargeObjects() throws {
        var text = "{"
        for i in 0..<50 { text += "\"k\(i)\":\(i)," }
        text += #""k7":"x"}"#
        guard case .object(let members) = try json(text) else {
            Issue.record("expected an object")
            return
        }
        #expect(members.count == 50)
        #expect(members[7].key == "k7" && members[7].value == .string("x"))
    }

    @Test func keysDifferingOnlyByNormalizationAreDistinct() throws {
        // "é" precomposed vs "e" + combining acute: distinct JSON keys.
        let value = try json("{\"\u{E9}\":1,\"e\u{301}\":2}")
        guard case .object(let members) = value else {
            Issue.record("expected an object")
            return
        }
        #expect(members.count == 2)
    }

    @Test func acceptsNestingUpToMaxDepth() throws {
        let depth = 512
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        _ = try json(text)
        #expect(parseError(Array(text.utf8), maxDepth: depth - 1)?.kind == .tooDeep)
        #expect(parseError(Array("{\"a\":{}}".utf8), maxDepth: 1)?.kind == .tooDeep)
        #expect(parseError(Array("1".utf8), maxDepth: 0) == nil)
    }

    /// The parser stops at the depth limit (offset 512), not after walking
    /// (or recursing through) all 100,000 levels.
    @Test func hundredThousandNestedArraysThrowTooDeepAtTheLimit() {
        let bytes = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        let error = parseError(bytes)
        #expect(error?.kind == .tooDeep)
        #expect(error?.isTooDeep == true)
        #expect(error?.offset == 512)
        #expect(error?.message.contains("offset 512") == true)
    }

    @Test func deepObjectsThrowTooDeep() {
        let bytes = Array(String(repeating: #"{"a":"#, count: 100_000).utf8)
        #expect(parseError(bytes)?.kind == .tooDeep)
    }

    static let invalid: [(String, [UInt8], JSONParseError.Kind)] = [
        ("trailing comma in array", Array("[1,2,]".utf8), .unexpectedByte),
        ("trailing comma in object", Array(#"{"a":1,}"#.utf8), .unexpectedByte),
        ("leading zero", Array("01".utf8), .invalidNumber),
        ("leading zero in array", Array("[00]".utf8), .invalidNumber),
        ("negative leading zero", Array("-01".utf8), .invalidNumber),
        ("no fraction digits", Array("1.".utf8), .invalidNumber),
        ("no integer digits", Array(".5".utf8), .unexpectedByte),
        ("plus sign", Array("+1".utf8), .unexpectedByte),
        ("lone minus", Array("-".utf8), .invalidNumber),
        ("empty exponent", Array("1e".utf8), .invalidNumber),
        ("hex number", Array("0x10".utf8), .trailingData),
        ("unescaped newline", Array("\"a\nb\"".utf8), .unescapedControlCharacter),
        ("unescaped tab", [0x22, 0x09, 0x22], .unescapedControlCharacter),
        ("unescaped NUL", [0x22, 0x00, 0x22], .unescapedControlCharacter),
        ("lone high surrogate", Array(#""\uD83D""#.utf8), .loneSurrogate),
        ("high surrogate then letter", Array(#""\uD83Dx""#.utf8), .loneSurrogate),
        ("two high surrogates", Array(#""\uD83D\uD83D""#.utf8), .loneSurrogate),
        ("lone low surrogate", Array(#""\uDE00""#.utf8), .loneSurrogate),
        ("invalid UTF-8 C3 28", [0x22, 0xC3, 0x28, 0x22], .invalidUTF8),
        ("overlong UTF-8", [0x22, 0xC0, 0xAF, 0x22], .invalidUTF8),
        ("UTF-8 encoded surrogate", [0x22, 0xED, 0xA0, 0x80, 0x22], .invalidUTF8),
        ("above U+10FFFF", [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], .invalidUTF8),
        ("truncated UTF-8", [0x22, 0xE2, 0x82], .invalidUTF8),
        ("raw invalid byte outside string", [0xC3, 0x28], .unexpectedByte),
        ("byte order mark", [0xEF, 0xBB, 0xBF] + Array("{}".utf8), .byteOrderMark),
        ("two values", Array("1 2".utf8), .trailingData),
        ("two objects", Array("{}{}".utf8), .trailingData),
        ("empty input", [], .unexpectedEndOfInput),
        ("only whitespace", Array(" \n\t".utf8), .unexpectedEndOfInput),
        ("NaN", Array("NaN".utf8), .unexpectedByte),
        ("Infinity", Array("-Infinity".utf8), .invalidNumber),
        ("line comment", Array("[1] // c".utf8), .trailingData),
        ("block comment", Array("[/* c */ 1]".utf8), .unexpectedByte),
        ("single quotes", Array("'a'".utf8), .unexpectedByte),
        ("unquoted key", Array("{a:1}".utf8), .unexpectedByte),
        ("missing colon", Array(#"{"a" 1}"#.utf8), .unexpectedByte),
        ("bad escape", Array(#""\x""#.utf8), .invalidEscape),
        ("short unicode escape", Array(#""\u12G4""#.utf8), .invalidEscape),
        ("misspelled literal", Array("tru".utf8), .invalidLiteral),
        ("capitalized literal", Array("True".utf8), .unexpectedByte),
        ("unterminated string", Array(#""abc"#.utf8), .unexpectedEndOfInput),
        ("unclosed array", Array("[1".utf8), .unexpectedEndOfInput),
        ("missing comma", Array("[1 2]".utf8), .unexpectedByte),
        ("vertical tab whitespace", [0x0B, 0x31], .unexpectedByte),
    ]

    @Test("rejects invalid input", arguments: invalid.indices)
    func rejectsInvalid(_ index: Int) {
        let (name, bytes, kind) = Self.invalid[index]
        let error = parseError(bytes)
        #expect(error?.kind == kind, "\(name): \(error?.message ?? "parsed")")
        #expect(error?.message.contains("byte offset") == true)
    }

    @Test func errorReportsOffset() {
        let error = parseError(Array(#"{"a": [1, 2,]}"#.utf8))
        #expect(error?.offset == 12)
        #expect(error?.message == "unexpected ']', expected a value at byte offset 12")
    }

    @Test func parsesFromRawBuffer() throws {
        let bytes = Array("[true]".utf8)
        let value = try bytes.withUnsafeBytes { raw throws(JSONParseError) in try JSONValue.parse(raw) }
        #expect(value == .array([.bool(true)]))
    }
}
