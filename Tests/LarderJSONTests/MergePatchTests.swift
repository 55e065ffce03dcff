import Testing
import LarderJSON

@Suite("RFC 7396 merge patch")
struct MergePatchTests {
    /// RFC 7396 Appendix A, all 15 examples: (original, patch, result).
    static let appendixA: [(String, String, String)] = [
        (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
        (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
        (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b":"c"}"#),
        (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a":["b"]}"#),
        (#"{"a": {"b": "c"}}"#, #"{"a": {"b": "d", "c": null}}"#, #"{"a":{"b":"d"}}"#),
        (#"{"a": [{"b":"c"}]}"#, #"{"a": [1]}"#, #"{"a":[1]}"#),
        (#"["a","b"]"#, #"["c","d"]"#, #"["c","d"]"#),
        (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
        (#"{"a":"foo"}"#, #"null"#, #"null"#),
        (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
        (#"{"e":null}"#, #"{"a":1}"#, #"{"e":null,"a":1}"#),
        (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
        (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a":{"bb":{}}}"#),
    ]

    @Test("Appendix A example", arguments: appendixA.indices)
    func appendixAExample(_ index: Int) throws {
        let (original, patch, expected) = Self.appendixA[index]
        let result = try json(original).mergePatched(with: try json(patch))
        #expect(result == (try json(expected)))
        // Exact text also pins member order: target order kept, new members last.
        #expect(compact(result) == expected)
    }

    @Test func appendixAHasAllFifteenExamples() {
        #expect(Self.appendixA.count == 15)
    }

    @Test func keepsTargetOrderAndAppendsNewMembersInPatchOrder() throws {
        let target = try json(#"{"z":1,"y":{"k":1,"j":2},"x":3}"#)
        let patch = try json(#"{"q":1,"y":{"a":0,"k":null},"x":null,"p":2}"#)
        #expect(compact(target.mergePatched(with: patch)) == #"{"z":1,"y":{"j":2,"a":0},"q":1,"p":2}"#)
    }

    @Test func largeObjectsUseIndexedLookup() throws {
        var members: [(key: String, value: JSONValue)] = []
        for i in 0..<100 { members.append((key: "k\(i)", value: .number("\(i)"))) }
        let patch = JSONValue.object([
            (key: "k50", value: .null), (key: "k99", value: .string("x")), (key: "new", value: .bool(true)),
        ])
        guard case .object(let result) = JSONValue.object(members).mergePatched(with: patch) else {
            Issue.record("expected an object")
            return
        }
        #expect(result.count == 100)
        #expect(!result.contains { $0.key == "k50" })
        #expect(result[98].key == "k99" && result[98].value == .string("x"))
        #expect(result.last?.key == "new")
    }
}
