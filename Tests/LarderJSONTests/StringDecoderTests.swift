import Testing
@testable import LarderJSON

/// `JSONStringDecoder`: the same string as the parser makes, wherever the
/// input is cut; the same refusals.
@Suite struct StringDecoderTests {
    /// Decodes `content` (the bytes after an opening quote) fed in two pieces cut at `cut`.
    static func decode(_ content: [UInt8], cut: Int) throws(JSONParseError) -> (bytes: [UInt8], used: Int, ended: Bool) {
        var decoder = JSONStringDecoder()
        var out: [UInt8] = []
        var used = 0
        for piece in [content[0..<cut], content[cut...]] where !decoder.isEnded {
            let array = Array(piece)
            let result = array.withUnsafeBytes { raw -> Result<Int, JSONParseError> in
                do throws(JSONParseError) { return .success(try decoder.decode(raw, into: &out)) } catch { return .failure(error) }
            }
            used += try result.get()
        }
        return (out, used, decoder.isEnded)
    }

    static let samples: [String] = [
        #"plain ascii""#,
        #"esc \" \\ \/ \b \f \n \r \t end""#,
        #"\u00e9\u20AC\uD83D\uDE00 and é€😀 raw""#,
        #"""#,
        #"\u0000\u001f""#,
        "\u{2028} line separator raw\"",
    ]

    @Test func everyCutGivesWhatTheParserGives() throws {
        for sample in Self.samples {
            let content = Array(sample.utf8)
            guard case .string(let expected) = try JSONValue.parse([0x22] + content) else {
                Issue.record("not a string: \(sample)")
                continue
            }
            for cut in 0...content.count {
                let (bytes, used, ended) = try Self.decode(content, cut: cut)
                #expect(bytes == Array(expected.utf8), "\(sample) cut at \(cut)")
                #expect(used == content.count && ended, "\(sample) cut at \(cut)")
            }
        }
    }

    @Test func bytesAfterTheClosingQuoteAreNotTaken() throws {
        let content = Array(#"ab\"c" , "next""#.utf8)
        for cut in 0...content.count {
            let (bytes, used, ended) = try Self.decode(content, cut: cut)
            #expect(bytes == Array(#"ab"c"#.utf8))
            #expect(used == 6 && ended, "cut at \(cut)")
        }
    }

    @Test func refusesWhatTheParserRefusesAtEveryCut() {
        let bad: [([UInt8], JSONParseError.Kind)] = [
            (Array(#"\uD83D alone""#.utf8), .loneSurrogate),
            (Array(#"\uDE00""#.utf8), .loneSurrogate),
            (Array(#"\uD83D\u0041""#.utf8), .loneSurrogate),
            (Array(#"\x""#.utf8), .invalidEscape),
            (Array(#"\u12G4""#.utf8), .invalidEscape),
            ([0x61, 0x0A, 0x22], .unescapedControlCharacter),
            ([0xC3, 0x28, 0x22], .invalidUTF8),
            ([0xE0, 0x80, 0x80, 0x22], .invalidUTF8),   // overlong
            ([0xED, 0xA0, 0x80, 0x22], .invalidUTF8),   // an encoded surrogate
            ([0xF4, 0x90, 0x80, 0x80, 0x22], .invalidUTF8),  // above U+10FFFF
            ([0xFF, 0x22], .invalidUTF8),
        ]
        for (content, kind) in bad {
            #expect(throws: JSONParseError.self) { _ = try JSONValue.parse([0x22] + content) }
            for cut in 0...content.count {
                do {
                    _ = try Self.decode(content, cut: cut)
                    Issue.record("accepted \(content) cut at \(cut)")
                } catch {
                    #expect(error.kind == kind, "\(content) cut at \(cut): \(error)")
                }
            }
        }
    }
}
