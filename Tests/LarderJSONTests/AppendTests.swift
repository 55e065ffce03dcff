import Testing
import LarderJSON

@Suite("Append")
struct AppendTests {
    func append(_ body: String, to current: String?, unique: Bool = false) throws -> (String, Int) {
        let (result, count) = JSONValue.appending(try json(body), to: try current.map(json), unique: unique)
        return (compact(result), count)
    }

    @Test func absentKey() throws {
        #expect(try append("1", to: nil) == ("[1]", 1))
        #expect(try append(#"{"a":1}"#, to: nil) == (#"[{"a":1}]"#, 1))
        #expect(try append("[1,2]", to: nil) == ("[1,2]", 2))
        #expect(try append("[]", to: nil) == ("[]", 0))
    }

    @Test func storedArray() throws {
        #expect(try append("3", to: "[1,2]") == ("[1,2,3]", 3))
        #expect(try append("[3,[4]]", to: "[1,2]") == ("[1,2,3,[4]]", 4))
        #expect(try append("null", to: "[]") == ("[null]", 1))
    }

    @Test func storedScalar() throws {
        #expect(try append("2", to: "1") == ("[1,2]", 2))
        #expect(try append("[2,3]", to: #""s""#) == (#"["s",2,3]"#, 3))
        #expect(try append("1", to: #"{"a":1}"#) == (#"[{"a":1},1]"#, 2))
        #expect(try append("1", to: "null") == ("[null,1]", 2))
    }

    @Test func uniqueSkipsElementsAlreadyStored() throws {
        #expect(try append("2", to: "[1,2]", unique: true) == ("[1,2]", 2))
        #expect(try append("2.0", to: "[1,2]", unique: true) == ("[1,2]", 2))
        #expect(try append("[2,3,1e0]", to: "[1,2]", unique: true) == ("[1,2,3]", 3))
        #expect(try append(#"{"b":2,"a":1}"#, to: #"[{"a":1,"b":2}]"#, unique: true) == (#"[{"a":1,"b":2}]"#, 1))
        #expect(try append("1", to: "1", unique: true) == ("[1]", 1))
        #expect(try append("true", to: "[1]", unique: true) == ("[1,true]", 2))
    }

    @Test func uniqueSkipsDuplicatesWithinBody() throws {
        #expect(try append("[1,1,2,1.0]", to: nil, unique: true) == ("[1,2]", 2))
        #expect(try append(#"["a","b","a","c","b","d"]"#, to: #"["c"]"#, unique: true) == (#"["c","a","b","d"]"#, 4))
    }

    @Test func uniqueKeepsDuplicatesAlreadyStored() throws {
        #expect(try append("[2,2]", to: "[1,1]", unique: true) == ("[1,1,2]", 3))
    }

    @Test func uniqueWithManyAdditionsUsesHashing() throws {
        let body = "[" + (0..<50).map { "\($0 % 20)" }.joined(separator: ",") + "]"
        let (result, count) = try append(body, to: "[0,1.0,2e0]", unique: true)
        #expect(count == 20)
        #expect(result == "[0,1.0,2e0," + (3..<20).map(String.init).joined(separator: ",") + "]")
    }

    @Test func notUniqueKeepsEverything() throws {
        #expect(try append("[1,1]", to: "[1]") == ("[1,1,1]", 3))
    }
}
