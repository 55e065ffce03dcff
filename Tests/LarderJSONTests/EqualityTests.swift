import Testing
import LarderJSON

@Suite("JSON equality")
struct EqualityTests {
    static let equalNumbers: [(String, String)] = [
        ("1", "1.0"), ("1", "1e0"), ("1", "10e-1"), ("1.0", "10e-1"), ("-0", "0"), ("0", "0.000e5"),
        ("-0.0", "0e-9"), ("100", "1e2"), ("100", "1E+2"), ("0.5", "5e-1"), ("-2.50", "-25e-1"),
        ("123456789012345678901234567890", "123456789012345678901234567890.000"),
        ("123456789012345678901234567890", "1.2345678901234567890123456789e29"),
        ("1e99999999999999999999", "10e99999999999999999998"),
        ("1e-99999999999999999999", "0.1e-99999999999999999998"),
        ("1e9223372036854775807", "10e9223372036854775806"),
    ]

    static let differentNumbers: [(String, String)] = [
        ("1", "2"), ("1", "-1"), ("1", "1.0000000000000000001"), ("0.1", "0.10000000000000001"),
        ("123456789012345678901234567890", "123456789012345678901234567891"),
        ("9007199254740993", "9007199254740992"), ("1e2", "1e3"),
        ("1e99999999999999999999", "1e99999999999999999998"), ("1e400", "1e-400"),
    ]

    @Test("equal numbers", arguments: equalNumbers.indices)
    func numbersEqual(_ index: Int) {
        let (a, b) = Self.equalNumbers[index]
        #expect(JSONValue.number(a) == .number(b), "\(a) == \(b)")
        #expect(JSONValue.number(b) == .number(a))
        #expect(JSONValue.number(a).hashValue == JSONValue.number(b).hashValue)
    }

    @Test("different numbers", arguments: differentNumbers.indices)
    func numbersDiffer(_ index: Int) {
        let (a, b) = Self.differentNumbers[index]
        #expect(JSONValue.number(a) != .number(b), "\(a) != \(b)")
    }

    @Test func kindsNeverMix() throws {
        #expect(try json("true") != json("1"))
        #expect(try json("false") != json("0"))
        #expect(try json("null") != json("0"))
        #expect(try json(#""1""#) != json("1"))
        #expect(try json("[]") != json("{}"))
        #expect(try json("[1]") != json("1"))
    }

    @Test func objectsIgnoreMemberOrder() throws {
        let a = try json(#"{"a":1,"b":[1,{"x":null,"y":2.0}],"c":"s"}"#)
        let b = try json(#"{"c":"s","b":[1.0,{"y":2,"x":null}],"a":1e0}"#)
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != (try json(#"{"c":"s","b":[1,{"y":2,"x":null}]}"#)))
        #expect(a != (try json(#"{"c":"s","b":[1,{"y":2,"x":null}],"a":2}"#)))
        #expect(a != (try json(#"{"c":"s","b":[1,{"y":2,"z":null}],"a":1}"#)))
    }

    @Test func largeObjectsIgnoreMemberOrder() {
        let members = (0..<40).map { (key: "k\($0)", value: JSONValue.number("\($0)")) }
        let a = JSONValue.object(members)
        let b = JSONValue.object(members.reversed())
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
    }

    @Test func handBuiltDuplicateKeysUseLastValue() {
        let a = JSONValue.object([(key: "a", value: .number("1")), (key: "a", value: .number("2"))])
        let b = JSONValue.object([(key: "a", value: .number("2"))])
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
    }

    @Test func arraysAreOrdered() throws {
        #expect(try json("[1,2]") == json("[1.0,2e0]"))
        #expect(try json("[1,2]") != json("[2,1]"))
        #expect(try json("[1,2]") != json("[1,2,3]"))
    }

    @Test func stringsCompareByScalars() {
        #expect(JSONValue.string("\u{E9}") != .string("e\u{301}"))
        #expect(JSONValue.string("😀") == .string("\u{1F600}"))
    }

    @Test func validatesNumberText() {
        #expect(JSONValue.isValidNumber("-1.5e+10"))
        #expect(!JSONValue.isValidNumber("01"))
        #expect(!JSONValue.isValidNumber(" 1"))
        #expect(!JSONValue.isValidNumber("1."))
        #expect(!JSONValue.isValidNumber(""))
    }
}
