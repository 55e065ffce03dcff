import LarderTestSupport
import Testing
import LarderHTTP

@Suite(.blockingLane) struct EntityTagTests {
    @Test func parsesSingleTags() {
        #expect(EntityTag("\"abc\"") == EntityTag(opaque: "\"abc\"", isWeak: false))
        #expect(EntityTag("W/\"abc\"") == EntityTag(opaque: "\"abc\"", isWeak: true))
        #expect(EntityTag(" \"abc\" ") == EntityTag(opaque: "\"abc\""))
        #expect(EntityTag("\"\"") == EntityTag(opaque: "\"\""))  // empty opaque tag is legal
        #expect(EntityTag("\"a,b\"") == EntityTag(opaque: "\"a,b\""))  // comma is an etagc
        #expect(EntityTag("W/\"abc\"")?.description == "W/\"abc\"")
    }

    @Test(arguments: ["", "abc", "\"abc", "abc\"", "w/\"abc\"", "W\"abc\"", "W/abc", "\"a b\"", "\"a\"b\"",
                      "\"abc\" \"def\"", "\"abc\",", "*", "\"a\u{7F}\""])
    func rejectsInvalidSingleTags(_ text: String) {
        #expect(EntityTag(text) == nil)
    }

    /// RFC 9110 8.8.3.2's comparison table.
    @Test func comparisonTable() {
        let w1 = EntityTag(opaque: "\"1\"", isWeak: true)
        let w2 = EntityTag(opaque: "\"2\"", isWeak: true)
        let s1 = EntityTag(opaque: "\"1\"", isWeak: false)
        // W/"1" vs W/"1": no strong, weak match
        #expect(!w1.strongMatch(w1)); #expect(w1.weakMatch(w1))
        // W/"1" vs W/"2": neither
        #expect(!w1.strongMatch(w2)); #expect(!w1.weakMatch(w2))
        // W/"1" vs "1": no strong, weak match
        #expect(!w1.strongMatch(s1)); #expect(w1.weakMatch(s1))
        #expect(!s1.strongMatch(w1)); #expect(s1.weakMatch(w1))
        // "1" vs "1": both
        #expect(s1.strongMatch(s1)); #expect(s1.weakMatch(s1))
    }

    @Test func comparisonIsByteWise() {
        // U+00E9 vs e + U+0301 are canonically equivalent Strings but different octets.
        let composed = EntityTag(opaque: "\"\u{E9}\"")
        let decomposed = EntityTag(opaque: "\"e\u{301}\"")
        #expect(!composed.strongMatch(decomposed))
        #expect(!composed.weakMatch(decomposed))
        #expect(composed != decomposed)
    }
}

@Suite(.blockingLane) struct EntityTagConditionTests {
    @Test func star() {
        #expect(EntityTagCondition.parse(["*"]) == .any)
        #expect(EntityTagCondition.parse([" * "]) == .any)
    }

    @Test func list() {
        #expect(EntityTagCondition.parse(["\"a\", W/\"b\""]) == .tags([
            EntityTag(opaque: "\"a\""), EntityTag(opaque: "\"b\"", isWeak: true),
        ]))
        #expect(EntityTagCondition.parse(["\"a\""]) == .tags([EntityTag(opaque: "\"a\"")]))
        #expect(EntityTagCondition.parse(["\"a\",\"b\""]) == .tags([EntityTag(opaque: "\"a\""), EntityTag(opaque: "\"b\"")]))
        #expect(EntityTagCondition.parse(["\t\"a\"\t,\t\"b\"\t"]) == .tags([EntityTag(opaque: "\"a\""), EntityTag(opaque: "\"b\"")]))
    }

    @Test func commaInsideATagIsNotASeparator() {
        #expect(EntityTagCondition.parse(["\"a,b\", \"c\""]) == .tags([EntityTag(opaque: "\"a,b\""), EntityTag(opaque: "\"c\"")]))
    }

    @Test func multipleFieldLinesCombine() {
        #expect(EntityTagCondition.parse(["\"a\"", "W/\"b\", \"c\""]) == .tags([
            EntityTag(opaque: "\"a\""), EntityTag(opaque: "\"b\"", isWeak: true), EntityTag(opaque: "\"c\""),
        ]))
        // One bad line spoils the whole field.
        #expect(EntityTagCondition.parse(["\"a\"", "b"]) == nil)
        // `*` may not be combined with anything, even across lines.
        #expect(EntityTagCondition.parse(["*", "\"a\""]) == nil)
        #expect(EntityTagCondition.parse(["*", "*"]) == nil)
    }

    @Test func emptyElementsAreIgnored() {
        #expect(EntityTagCondition.parse([", \"a\", , \"b\","]) == .tags([EntityTag(opaque: "\"a\""), EntityTag(opaque: "\"b\"")]))
        #expect(EntityTagCondition.parse(["*", ""]) == .any)
        #expect(EntityTagCondition.parse(["*,"]) == .any)
    }

    @Test func emptyValueIsAnEmptyList() {
        #expect(EntityTagCondition.parse([""]) == .tags([]))
        #expect(EntityTagCondition.parse(["  "]) == .tags([]))
        #expect(EntityTagCondition.parse([" , , "]) == .tags([]))
        #expect(EntityTagCondition.parse([]) == .tags([]))
    }

    @Test(arguments: [
        "abc",                 // unquoted
        "\"a\" \"b\"",         // missing comma
        "\"a\"b",
        "*, \"a\"",            // * mixed with tags
        "\"a\", *",
        "**",
        "w/\"a\"",             // lowercase weak marker
        "W/ \"a\"",
        "\"unterminated",
        "\"a b\"",             // SP not allowed inside
        "garbage!",
        "\"a\";",
    ])
    func rejectsGarbage(_ value: String) {
        #expect(EntityTagCondition.parse([value]) == nil)
    }
}
