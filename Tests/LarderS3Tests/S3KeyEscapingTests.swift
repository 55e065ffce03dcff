@testable import LarderS3
import LarderTestSupport
import Testing

/// S3 keys with segments Larder's key rules refuse map to one Larder key
/// each and back (`S3KeyEscaping`); other keys are their own.
@Suite(.blockingLane) struct S3KeyEscapingTests {
    static func escape(_ key: String) -> String { String(decoding: S3KeyEscaping.escape(Array(key.utf8)), as: UTF8.self) }

    @Test func specialSegmentsGetASpaceInFrontAndOthersStayAsTheyAre() {
        let cases = [
            ("photos/", "photos/ "), ("a//b", "a/ /b"), ("/lead", " /lead"), ("./x", " ./x"), ("x/..", "x/ .."),
            ("plain/key.txt", "plain/key.txt"), ("...", "..."), (".hidden", ".hidden"), ("//", " / / "),
            // Segments already of the kept shape gain a space too; others
            // with spaces in front (valid Larder keys before) stay as they are.
            (" ", "  "), (" ..", "  .."), ("a/  .", "a/   ."), (" space", " space"), ("a/ b/", "a/ b/ "), (" . x", " . x"),
        ]
        for (s3, larder) in cases {
            #expect(Self.escape(s3) == larder, "\(s3)")
            #expect(S3KeyEscaping.unescape(larder) == s3, "\(larder)")
        }
    }

    @Test func everyKeyRoundTrips() {
        let alphabet: [UInt8] = Array("/. a".utf8)
        var g = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let key = (0..<Int.random(in: 1...10, using: &g)).map { _ in alphabet.randomElement(using: &g)! }
            let escaped = S3KeyEscaping.escape(key)
            #expect(S3KeyEscaping.unescape(escaped) == key)
            // A key that was a valid Larder key is its own.
            let segments = key.split(separator: 0x2F, omittingEmptySubsequences: false)
            if !segments.contains(where: { s in let rest = s.drop { $0 == 0x20 }; return rest.isEmpty || rest.elementsEqual([0x2E]) || rest.elementsEqual([0x2E, 0x2E]) }) {
                #expect(escaped == key)
            }
            // Every segment of the escaped form is a valid Larder segment.
            #expect(!escaped.split(separator: 0x2F, omittingEmptySubsequences: false).contains { $0.isEmpty || $0.elementsEqual([0x2E]) || $0.elementsEqual([0x2E, 0x2E]) })
        }
    }

    @Test func aPrefixIsEscapedAsTheKeysUnderItBegin() {
        func prefix(_ p: String) -> String? { S3KeyEscaping.escapePrefix(Array(p.utf8)).map { String(decoding: $0, as: UTF8.self) } }
        #expect(prefix("photos/") == "photos/")
        #expect(prefix("photos/20") == "photos/20")
        #expect(prefix("a//") == "a/ /")
        #expect(prefix("a/ x") == "a/ x")
        #expect(prefix("a/ ") == nil, "' ' begins kept segments ('  ') and others (' x')")
        #expect(prefix("") == "")
        #expect(prefix("x/.") == nil && prefix("..") == nil, "keys under '.' begin with ' .' or '.': no one prefix")
        #expect(prefix("x/.a") == "x/.a")
    }
}
