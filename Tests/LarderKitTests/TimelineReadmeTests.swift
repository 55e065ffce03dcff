import Foundation
import LarderTestSupport
import Testing

extension KitTests {
    /// README.md's Swift example is TimelineExample.swift's marked region,
    /// character for character, so the documented code is the compiled and
    /// tested code.
    @Suite struct TimelineReadmeTests {
        static let source = Repository.path("Tests/LarderKitTests/TimelineExample.swift")

        /// The lines between `// README: swift-timeline begin` and `... end`.
        static func region() throws -> String {
            let text = try String(contentsOfFile: source, encoding: .utf8)
            guard let begin = text.range(of: "// README: swift-timeline begin\n"),
                  let end = text.range(of: "// README: swift-timeline end", range: begin.upperBound..<text.endIndex) else {
                throw KitFailure("no swift-timeline markers in \(source)")
            }
            return String(text[begin.upperBound..<end.lowerBound])
        }

        /// The body of the ```swift block on the line right after
        /// `<!-- swift-timeline -->`, if there is one there (a later block is
        /// another example, not this one).
        static func readmeBlock(_ readme: String) -> String? {
            guard let tag = readme.range(of: "<!-- swift-timeline -->\n"),
                  readme[tag.upperBound...].hasPrefix("```swift\n") else { return nil }
            let start = readme.index(tag.upperBound, offsetBy: "```swift\n".count)
            guard let close = readme.range(of: "\n```", range: start..<readme.endIndex) else { return nil }
            return String(readme[start..<close.lowerBound]) + "\n"
        }

        @Test func readmeShowsTheCompiledTimelineExample() throws {
            let readme = try String(contentsOfFile: Repository.path("README.md"), encoding: .utf8)
            let region = try Self.region()
            guard let block = Self.readmeBlock(readme) else {
                Issue.record("""
                    README.md has no Swift timeline example. Expected a line `<!-- swift-timeline -->` followed on \
                    the next line by a ```swift block holding exactly the lines between `// README: swift-timeline begin` and \
                    `// README: swift-timeline end` in Tests/LarderAppTests/Kit/TimelineExample.swift:
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
                README.md's swift-timeline block differs from TimelineExample.swift's region at line \(line + 1) of the block:
                README:  \(line < got.count ? String(got[line]) : "(end)")
                example: \(line < want.count ? String(want[line]) : "(end)")
                Paste the region between the markers into the block.
                """)
        }

        /// The block finder itself: a README laid out as the lead will paste it
        /// reads back as the region, and a later ```swift block is not taken for it.
        @Test func theBlockFinderReadsBackAPastedRegion() throws {
            let region = try Self.region()
            let pasted = "# Larder\n\n<!-- swift-timeline -->\n```swift\n" + region + "```\n\nThen:\n\n```swift\nlet other = 1\n```\n"
            #expect(Self.readmeBlock(pasted) == region)
            #expect(Self.readmeBlock("<!-- swift-timeline -->\nTO COME\n\n```swift\nlet other = 1\n```\n") == nil)
        }
    }
}
