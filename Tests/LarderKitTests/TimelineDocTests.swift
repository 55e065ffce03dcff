import Foundation
import Testing
import LarderTestSupport

extension KitTests {
    /// docs/swift-api.md's Swift example is TimelineExample.swift's marked
    /// region, character for character, so the documented code is the
    /// compiled and tested code (TimelineTests runs it).
    @Suite struct TimelineDocTests {
        static let page = "docs/swift-api.md"
        static let source = Repository.path("Tests/LarderKitTests/TimelineExample.swift")

        /// The lines between `// docs: swift-timeline begin` and `... end`.
        static func region() throws -> String {
            let text = try String(contentsOfFile: source, encoding: .utf8)
            guard let begin = text.range(of: "// docs: swift-timeline begin\n"),
                  let end = text.range(of: "// docs: swift-timeline end", range: begin.upperBound..<text.endIndex) else {
                throw KitFailure("no swift-timeline markers in \(source)")
            }
            return String(text[begin.upperBound..<end.lowerBound])
        }

        /// The body of the ```swift block on the line right after
        /// `<!-- swift-timeline -->`, if there is one there (a later block is
        /// another example, not this one).
        static func docBlock(_ page: String) -> String? {
            guard let block = DocExample.fencedBlock(in: page, after: "swift-timeline"), block.info == "swift" else { return nil }
            return block.body
        }

        @Test func theSwiftGuideShowsTheCompiledTimelineExample() throws {
            let page = try String(contentsOfFile: Repository.path(Self.page), encoding: .utf8)
            let region = try Self.region()
            guard let block = Self.docBlock(page) else {
                Issue.record("""
                    \(Self.page) has no Swift timeline example. Expected a line `<!-- swift-timeline -->` followed on \
                    the next line by a ```swift block holding exactly the lines between `// docs: swift-timeline begin` and \
                    `// docs: swift-timeline end` in Tests/LarderKitTests/TimelineExample.swift:
                    <!-- swift-timeline -->
                    ```swift
                    \(region)```
                    """)
                return
            }
            guard block != region else { return }
            let got = block.split(separator: "\n", omittingEmptySubsequences: false)
            let want = region.split(separator: "\n", omittingEmptySubsequences: false)
            let line = zip(got, want).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(got.count, want.count)
            Issue.record("""
                \(Self.page)'s swift-timeline block differs from TimelineExample.swift's region at line \(line + 1) of the block:
                docs:    \(line < got.count ? String(got[line]) : "(end)")
                example: \(line < want.count ? String(want[line]) : "(end)")
                Paste the region between the markers into the block.
                """)
        }

        /// The block finder itself: a page laid out as the region is pasted
        /// reads back as the region, and a later ```swift block is not taken for it.
        @Test func theBlockFinderReadsBackAPastedRegion() throws {
            let region = try Self.region()
            let pasted = "# Larder\n\n<!-- swift-timeline -->\n```swift\n" + region + "```\n\nThen:\n\n```swift\nlet other = 1\n```\n"
            #expect(Self.docBlock(pasted) == region)
            #expect(Self.docBlock("<!-- swift-timeline -->\nTO COME\n\n```swift\nlet other = 1\n```\n") == nil)
            #expect(Self.docBlock("<!-- swift-timeline -->\n```sh\nls\n```\n") == nil, "a block in another language")
        }
    }
}
