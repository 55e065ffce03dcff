import Testing
import LarderJSON

@Suite("Serialization")
struct SerializeTests {
    @Test func writesCompactJSON() throws {
        let text = #"{ "a" : [ 1 , 2.50 , { } , [ ] ] , "b" : null , "c" : true }"#
        #expect(compact(try json(text)) == #"{"a":[1,2.50,{},[]],"b":null,"c":true}"#)
    }

    @Test func escapesMinimally() {
        let value = JSONValue.string("q\"b\\s/\n\r\t\u{8}\u{C}\u{0}\u{1F}\u{7F}é😀\u{2028}\u{2029}")
        #expect(compact(value) == #""q\"b\\s/\n\r\t\b\f\u0000\u001f"# + "\u{7F}é😀" + #"\u2028\u2029""#)
    }

    @Test func escapesKeys() {
        #expect(compact(.object([(key: "a\"\n", value: .null)])) == #"{"a\"\n":null}"#)
    }

    @Test func leavesOtherE2SequencesAlone() {
        // U+2027, U+202A and U+20AC share the E2 lead byte but need no escape.
        let text = "\u{2027}\u{202A}€"
        #expect(compact(.string(text)) == "\"\(text)\"")
    }

    static let roundTrips: [(input: String, output: String)] = [
        (#""\u00e9""#, "\"é\""),
        (#""\uD83D\uDE00""#, "\"😀\""),
        (#""\ud83d\ude00 x""#, "\"😀 x\""),
        (#""\u2028\u2029""#, #""\u2028\u2029""#),
        ("\"\u{2028}\"", #""\u2028""#),
        (#""\u0001\u001F""#, #""\u0001\u001f""#),
        (#""\/""#, #""/""#),
        (#"[1E+2,-0.0,1e-7]"#, #"[1E+2,-0.0,1e-7]"#),
        (#"{"k":{"k":[{"k":"v"}]}}"#, #"{"k":{"k":[{"k":"v"}]}}"#),
    ]

    @Test("round trip", arguments: roundTrips.indices)
    func roundTrip(_ index: Int) throws {
        let (input, output) = Self.roundTrips[index]
        let value = try json(input)
        #expect(compact(value) == output)
        // Serialized output parses back to an identical value.
        let reparsed = try JSONValue.parse(value.serialized())
        #expect(reparsed == value)
        #expect(reparsed.serialized() == value.serialized())
    }

    @Test func serializesDeepValuesIteratively() throws {
        var value = JSONValue.number("1")
        for _ in 0..<10_000 { value = .array([value]) }
        let bytes = value.serialized()
        #expect(bytes.count == 20_001)
        #expect(bytes.prefix(3) == [0x5B, 0x5B, 0x5B])
    }
}
