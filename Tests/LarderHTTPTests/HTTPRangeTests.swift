import LarderTestSupport
import Testing
import LarderHTTP

@Suite(.blockingLane) struct ByteRangeTests {
    private func eval(_ header: String, _ length: Int64 = 1000) -> RangeOutcome {
        ByteRangeRequest.evaluate(header, length: length)
    }

    @Test func closedRange() {
        #expect(eval("bytes=0-99") == .partial(start: 0, end: 99))
        #expect(eval("bytes=0-0") == .partial(start: 0, end: 0))
        #expect(eval("bytes=999-999") == .partial(start: 999, end: 999))
    }

    @Test func openRange() {
        #expect(eval("bytes=100-") == .partial(start: 100, end: 999))
        #expect(eval("bytes=0-") == .partial(start: 0, end: 999))
    }

    @Test func suffixRange() {
        #expect(eval("bytes=-5") == .partial(start: 995, end: 999))
        #expect(eval("bytes=-1000") == .partial(start: 0, end: 999))
        #expect(eval("bytes=-5000") == .partial(start: 0, end: 999))  // longer than the representation: all of it
        #expect(eval("bytes=-0") == .unsatisfiable)
    }

    @Test func lastPosIsClamped() {
        #expect(eval("bytes=0-5000") == .partial(start: 0, end: 999))
        #expect(eval("bytes=500-99999999999999999999999") == .partial(start: 500, end: 999))  // saturates
    }

    @Test func firstPosPastTheEndIsUnsatisfiable() {
        #expect(eval("bytes=1000-") == .unsatisfiable)
        #expect(eval("bytes=1000-2000") == .unsatisfiable)
        #expect(eval("bytes=99999999999999999999999-") == .unsatisfiable)
    }

    @Test func lastBeforeFirstIsInvalid() {
        #expect(eval("bytes=5-2") == .full)
    }

    @Test func unitAndWhitespace() {
        #expect(eval("items=0-1") == .full)
        #expect(eval("bytesx=0-1") == .full)
        #expect(eval("BYTES=0-1") == .partial(start: 0, end: 1))
        #expect(eval("Bytes=0-1") == .partial(start: 0, end: 1))
        #expect(eval("  bytes=0-1  ") == .partial(start: 0, end: 1))
        #expect(eval("bytes= 0-1 ") == .partial(start: 0, end: 1))
        #expect(eval("bytes=0-1, ") == .partial(start: 0, end: 1))  // empty list element ignored
    }

    @Test func severalRangesAreIgnored() {
        #expect(eval("bytes=0-1,5-6") == .full)
        #expect(eval("bytes=0-1, -5") == .full)
        #expect(eval("bytes=2000-3000, 4000-") == .full)
    }

    @Test(arguments: ["bytes=abc", "bytes=", "bytes", "=0-1", "bytes=-", "bytes=1-2-3", "bytes=0-1,x",
                      "bytes=0 -1", "bytes=+1-2", "bytes=-+5", "bytes=0x10-", "bytes=1-a", ""])
    func malformedIsIgnored(_ header: String) {
        #expect(eval(header) == .full)
    }

    @Test func emptyRepresentation() {
        #expect(eval("bytes=0-99", 0) == .unsatisfiable)
        #expect(eval("bytes=0-", 0) == .unsatisfiable)
        #expect(eval("bytes=-0", 0) == .unsatisfiable)
        // RFC 9110 14.1.1: a non-zero suffix on an empty representation is
        // satisfiable, but 206 cannot carry zero bytes: ignore the range.
        #expect(eval("bytes=-5", 0) == .full)
        // Malformed stays malformed.
        #expect(eval("bytes=abc", 0) == .full)
    }

    @Test func contentRangeValues() {
        #expect(ByteRangeRequest.contentRange(start: 0, end: 99, length: 1000) == "bytes 0-99/1000")
        #expect(ByteRangeRequest.unsatisfiedContentRange(length: 1000) == "bytes */1000")
    }
}

@Suite(.blockingLane) struct IfRangeTests {
    private let tags = ["\"v1\"", "\"v1-gz\""]
    private let t0: Int64 = 784_111_777

    private func allows(_ value: String?) -> Bool {
        ByteRangeRequest.ifRangeAllows(value, currentETags: tags, lastModified: t0)
    }

    @Test func absentAllows() {
        #expect(allows(nil))
    }

    @Test func entityTag() {
        #expect(allows("\"v1\""))
        #expect(allows("\"v1-gz\""))
        #expect(allows(" \"v1\" "))
        #expect(!allows("\"v0\""))
    }

    @Test func weakEntityTagNeverAllows() {
        #expect(!allows("W/\"v1\""))
    }

    @Test func date() {
        #expect(allows("Sun, 06 Nov 1994 08:49:37 GMT"))
        #expect(allows("Sun Nov  6 08:49:37 1994"))
        #expect(!allows("Sun, 06 Nov 1994 08:49:38 GMT"))  // later: still not exact
        #expect(!allows("Sun, 06 Nov 1994 08:49:36 GMT"))
        // A date whose day name starts with W is still a date.
        #expect(ByteRangeRequest.ifRangeAllows("Wed, 09 Nov 1994 08:49:37 GMT", currentETags: tags,
                                               lastModified: t0 + 3 * 86_400))
    }

    @Test func malformedDoesNotAllow() {
        #expect(!allows(""))
        #expect(!allows("v1"))
        #expect(!allows("\"v1\", \"v1-gz\""))
        #expect(!allows("Sun, 06 Nov 1994 25:49:37 GMT"))
    }
}
