import Testing
@testable import LarderJSON

/// `JSONObjectScanner`: members and the exact bytes of their values, in
/// complete and partial texts.
@Suite struct ObjectScannerTests {
    static func scan(_ text: String) throws(JSONParseError) -> JSONObjectScanner.Result {
        let bytes = Array(text.utf8)
        let result = bytes.withUnsafeBytes { raw -> Result<JSONObjectScanner.Result, JSONParseError> in
            do throws(JSONParseError) { return .success(try JSONObjectScanner.scan(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    static func raw(_ text: String, _ range: Range<Int>) -> String {
        String(decoding: Array(text.utf8)[range], as: UTF8.self)
    }

    @Test func completeObjectGivesRawValues() throws {
        let text = #"  { "a" : { "x" : [1, "]}" ] } , "b\"q":"s\"}", "c":-1.5e3,"d":null ,"e\u0041":[] }  "#
        guard case .complete(let members, let end) = try Self.scan(text) else {
            Issue.record("not complete")
            return
        }
        #expect(members.map(\.name) == ["a", "b\"q", "c", "d", "eA"])
        #expect(members.map { Self.raw(text, $0.value) } == [#"{ "x" : [1, "]}" ] }"#, #""s\"}""#, "-1.5e3", "null", "[]"])
        #expect(Self.raw(text, end..<text.utf8.count) == "  ")
        guard case .complete(let none, _) = try Self.scan("{ }") else { Issue.record("{ } not complete"); return }
        #expect(none.isEmpty)
    }

    @Test func partialObjectNamesTheMemberWhoseValueHasBegun() throws {
        let text = #"{"key":"k","base64":"QUJD"#
        guard case .partial(let members, let open?) = try Self.scan(text) else {
            Issue.record("no open member")
            return
        }
        #expect(members.map(\.name) == ["key"])
        #expect(open.name == "base64")
        #expect(Self.raw(text, open.valueStart..<text.utf8.count) == #""QUJD"#)
        for cut in [#"{"#, #"{"key"#, #"{"key":"k","#, #"{"key":"k","bas"#, #"{"key":"k","base64" "#, #"{"key":"k","base64":"#] {
            guard case .partial(_, nil) = try Self.scan(cut) else {
                Issue.record("\(cut): expected no open member")
                continue
            }
        }
        // A number may go on: not complete until a delimiter.
        guard case .partial(_, let number?) = try Self.scan(#"{"n":12"#) else { Issue.record("number"); return }
        #expect(number.name == "n")
    }

    @Test func structuralErrorsAreRefused() {
        for text in [#"[1]"#, #"{"a" 1}"#, #"{"a":1 "b":2}"#, #"{"a":1,}"#, #"{a:1}"#, #"{"a":,}"#, #"{"a":}"#] {
            #expect(throws: JSONParseError.self, "\(text)") { _ = try Self.scan(text) }
        }
    }
}
