import Foundation
import LarderModel
import Testing

/// The model's wire types: the server's ordered encoding, and Foundation's
/// decoding of it (what every Swift client does).
@Suite struct ModelJSONTests {
    @Test func membersComeInDeclarationOrderWithNullsWritten() {
        let page = ListingPage(prefix: "users/", keys: [
            ValueInfo(key: "users/1", size: 812, storedSize: 401, contentType: "application/json", etag: "\"18ea\"",
                      modified: Timestamp(nanoseconds: 1_795_687_200_000_000_000)),
        ], prefixes: ["users/archive/"])
        let text = String(decoding: ModelJSON.encode(page), as: UTF8.self)
        #expect(text == #"{"prefix":"users/","keys":[{"key":"users/1","size":812,"storedSize":401,"#
            + #""contentType":"application/json","etag":"\"18ea\"","modified":"2026-11-26T10:00:00Z","expires":null}],"#
            + #""prefixes":["users/archive/"],"next":null}"#)
    }

    @Test func stringsEscapeControlsQuotesAndLineSeparatorsButNotSlashes() throws {
        let body = ErrorBody(.invalidKey, "a/b \"q\" \\ \n\t\u{01} \u{2028} é 😀")
        let bytes = ModelJSON.encode(body)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text == #"{"error":"invalid_key","message":"a/b \"q\" \\ \n\t\u0001 \u2028 é 😀"}"#)
        #expect(try ModelJSON.decode(ErrorBody.self, from: Data(bytes)) == body)
    }

    @Test func everyWireTypeRoundTripsThroughFoundation() throws {
        let info = ValueInfo(key: "k", size: 1, storedSize: nil, contentType: "text/plain", etag: "\"1\"",
                             modified: Timestamp(nanoseconds: 1_000_000_000), expires: Timestamp(nanoseconds: 9_000_000_000),
                             source: .fixture)
        #expect(try ModelJSON.decode(ValueInfo.self, from: ModelJSON.encodeData(info)) == info)
        let change = ChangeData(key: "a", etag: "\"2\"", size: 3, source: .fixture)
        #expect(String(decoding: ModelJSON.encode(change), as: UTF8.self) == #"{"key":"a","etag":"\"2\"","size":3,"source":"fixture"}"#)
        #expect(try ModelJSON.decode(ChangeData.self, from: ModelJSON.encodeData(change)) == change)
        let bulk = ChangeData(prefix: "users/", deleted: 812)
        #expect(String(decoding: ModelJSON.encode(bulk), as: UTF8.self) == #"{"prefix":"users/","deleted":812}"#)
        let faults = FaultList(rules: [FaultRuleStatus(id: "r", prefix: "p/", methods: nil, delayMs: 0, jitterMs: 0, status: 503,
                                                       probability: 0.25, count: nil, remaining: nil, matched: 1, fired: 1)], seed: nil)
        #expect(String(decoding: ModelJSON.encode(faults), as: UTF8.self)
            == #"{"rules":[{"id":"r","prefix":"p/","methods":null,"delayMs":0,"jitterMs":0,"status":503,"drop":null,"truncate":null,"bytesPerSecond":null,"probability":0.25,"count":null,"remaining":null,"matched":1,"fired":1}],"seed":null}"#)
        #expect(try ModelJSON.decode(FaultList.self, from: ModelJSON.encodeData(faults)) == faults)
        // A code a newer server invents still decodes.
        let unknown = try ModelJSON.decode(ErrorBody.self, from: Data(#"{"error":"brand_new","message":"m"}"#.utf8))
        #expect(unknown.error == ErrorCode("brand_new"))
    }

    @Test func timestampsParseAnyRFC3339AndWriteWholeSecondsUTC() throws {
        let t = try ModelJSON.decode([Timestamp].self, from: Data(#"["2026-11-20T10:00:00.5+01:00"]"#.utf8))[0]
        #expect(t.nanoseconds == 1_795_165_200_500_000_000)
        #expect(t.description == "2026-11-20T09:00:00Z")
        #expect(abs(t.date.timeIntervalSince1970 - 1_795_165_200.5) < 1e-6)
        #expect(throws: DecodingError.self) { try ModelJSON.decode([Timestamp].self, from: Data(#"["yesterday"]"#.utf8)) }
    }

    @Test func keysPercentEncodeEveryByteOutsideTheUnreservedSet() {
        #expect(KeyPercentEncoding.percentEncode("a b/ü?#%") == "a%20b/%C3%BC%3F%23%25")
        #expect(KeyPercentEncoding.percentEncode("A-z_0.9~/x") == "A-z_0.9~/x")
    }

    /// Every number type Codable has, nested containers, a superclass, and a
    /// key encoded twice: the same JSON Foundation would write, in order.
    @Test func theEncoderCoversEveryPrimitiveAndContainer() throws {
        struct Numbers: Encodable {
            var i8: Int8 = -8, i16: Int16 = -16, u8: UInt8 = 8, u16: UInt16 = 16, f: Float = 1.5, whole: Double = 3, d: Double = 0.1
            var nested: [String: [Int]] = ["a": [1, 2]]
            var empty: [Int] = []
            var none: Int? = nil
        }
        let numbers = String(decoding: try OrderedJSONEncoder().encode(Numbers()), as: UTF8.self)
        #expect(numbers == #"{"i8":-8,"i16":-16,"u8":8,"u16":16,"f":1.5,"whole":3,"d":0.1,"nested":{"a":[1,2]},"empty":[]}"#)

        class Base: Encodable {
            var b = 1
            private enum CodingKeys: String, CodingKey { case b }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(b, forKey: .b)
            }
        }
        final class Derived: Base, @unchecked Sendable {
            private enum CodingKeys: String, CodingKey { case x }
            override func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(2, forKey: .x)
                try super.encode(to: c.superEncoder())
                try c.encode(3, forKey: .x)  // the second encode of a key replaces the first, in place
            }
        }
        #expect(String(decoding: try OrderedJSONEncoder().encode(Derived()), as: UTF8.self) == #"{"x":3,"super":{"b":1}}"#)
        #expect(throws: EncodingError.self) { try OrderedJSONEncoder().encode([Double.nan]) }
    }

    /// A 10,000-key page (the largest `limit`) encodes in linear time: a
    /// quadratic encoder would take seconds here, not milliseconds.
    @Test func aFullListingPageEncodesAndDecodes() throws {
        let keys = (0..<10_000).map { i in
            ValueInfo(key: "k/\(i)", size: i, storedSize: i, contentType: "application/json", etag: "\"\(i)\"",
                      modified: Timestamp(nanoseconds: Int64(i) * 1_000_000_000))
        }
        let page = ListingPage(prefix: "k/", keys: keys, next: "k/9999")
        let bytes = ModelJSON.encode(page)
        #expect(try ModelJSON.decode(ListingPage.self, from: Data(bytes)) == page)
    }
}
