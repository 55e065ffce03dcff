import Foundation
import Testing
import LarderTestSupport

/// Every relative link in README.md, ARCHITECTURE.md and docs/*.md leads
/// somewhere: the file or folder exists, and an `#anchor` into a Markdown
/// file names one of its headings (GitHub's slugs). Guides move and get
/// renamed; a reader should never follow a link into nothing.
@Suite(.blockingLane) struct DocLinkTests {
    @Test func everyRelativeLinkPointsAtSomethingThatExists() throws {
        let files = DocExample.markdownFiles
        #expect(files.contains("README.md") && files.contains("docs/README.md"), "\(files)")
        for file in files {
            for problem in try Self.brokenLinks(in: Repository.path(file)) {
                Issue.record("\(file): \(problem)")
            }
        }
    }

    /// The checker finds what it must: a missing file, a missing anchor in
    /// another page and in the same page, and lets good links, outside URLs
    /// and links inside code pass.
    @Test func theCheckerReportsBrokenLinksAndOnlyThose() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/docs", withIntermediateDirectories: true)
        try Data("# Other page\n\n## The server's side of it (`--port 0`)\n\n## Twice\n\n## Twice\n".utf8)
            .write(to: URL(fileURLWithPath: dir + "/docs/other.md"))
        let page = """
            # Page

            [fine](docs/other.md) [fine too](docs/other.md#the-servers-side-of-it---port-0)
            [second of two](docs/other.md#twice-1) ![folder](docs/) [self](#page) [outside](https://example.com/x)
            `[in code](missing.md)`

            ```
            [in a block](missing-too.md)
            ```
            [gone](docs/gone.md) [no heading](docs/other.md#nothing) [no own heading](#nowhere)
            [third of two](docs/other.md#twice-2)
            """
        try Data(page.utf8).write(to: URL(fileURLWithPath: dir + "/page.md"))
        let problems = try Self.brokenLinks(in: dir + "/page.md")
        #expect(problems.count == 4, "\(problems)")
        for target in ["docs/gone.md", "docs/other.md#nothing", "#nowhere", "docs/other.md#twice-2"] {
            #expect(problems.contains { $0.contains("(\(target))") }, "\(target) not reported: \(problems)")
        }
    }

    @Test func slugsFollowGitHub() {
        #expect(Self.slugs(of: "# Conditional requests (RFC 9110 section 13)\n") == ["conditional-requests-rfc-9110-section-13"])
        #expect(Self.slugs(of: "## `larder healthcheck`\n## Earlier figures (`bench/`)\n") == ["larder-healthcheck", "earlier-figures-bench"])
        #expect(Self.slugs(of: "## A\n## A\n## a\n") == ["a", "a-1", "a-2"])
        #expect(Self.slugs(of: "## [Values](values.md) and *more*\n```\n# not a heading\n```\n") == ["values-and-more"])
    }

    /// The broken relative links of the Markdown file at `path`, each as
    /// `[text](target): why`.
    static func brokenLinks(in path: String) throws -> [String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        var problems: [String] = []
        for (label, target) in links(in: text) {
            if target.contains(":") && !target.hasPrefix("#") { continue }  // http:, https:, mailto:
            let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let file = parts[0].removingPercentEncoding ?? parts[0]
            let resolved = file.isEmpty ? URL(fileURLWithPath: path) : directory.appendingPathComponent(file).standardized
            guard FileManager.default.fileExists(atPath: resolved.path) else {
                problems.append("[\(label)](\(target)): \(resolved.path) does not exist")
                continue
            }
            guard parts.count == 2, resolved.pathExtension == "md" else { continue }
            let headings = slugs(of: try String(contentsOf: resolved, encoding: .utf8))
            if !headings.contains(parts[1]) {
                problems.append("[\(label)](\(target)): no heading with the anchor #\(parts[1]) in \(resolved.lastPathComponent)")
            }
        }
        return problems
    }

    /// The `[text](target)` and `![alt](target)` links of Markdown text,
    /// leaving out fenced blocks and inline code.
    static func links(in text: String) -> [(label: String, target: String)] {
        proseLines(of: text).flatMap { line in
            let prose = line.replacing(/`[^`]*`/, with: "")
            return prose.matches(of: /\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/).map { (String($0.output.1), String($0.output.2)) }
        }
    }

    /// The anchors GitHub gives the headings of Markdown text, in order:
    /// the heading's text as shown (code spans, emphasis and links reduced
    /// to their text), lowercased, with everything but letters, digits,
    /// spaces, `-` and `_` removed and spaces turned into `-`; a repeated
    /// slug gets `-1`, `-2`, ... .
    static func slugs(of text: String) -> [String] {
        var seen: [String: Int] = [:]
        var result: [String] = []
        for line in proseLines(of: text) {
            guard let heading = line.firstMatch(of: /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/) else { continue }
            var title = String(heading.output.1)
            title = title.replacing(/!?\[([^\]]*)\]\([^)]*\)/) { String($0.output.1) }
            title = title.replacingOccurrences(of: "`", with: "").replacingOccurrences(of: "*", with: "")
            let slug = String(title.lowercased().unicodeScalars.filter {
                CharacterSet.letters.contains($0) || CharacterSet.decimalDigits.contains($0) || $0 == " " || $0 == "-" || $0 == "_"
            }.map(Character.init)).replacingOccurrences(of: " ", with: "-")
            if let count = seen[slug] {
                result.append("\(slug)-\(count)")
                seen[slug] = count + 1
            } else {
                result.append(slug)
                seen[slug] = 1
            }
        }
        return result
    }

    /// The lines of Markdown text outside fenced code blocks.
    static func proseLines(of text: String) -> [Substring] {
        var inFence = false
        return text.split(separator: "\n", omittingEmptySubsequences: false).filter { line in
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                inFence.toggle()
                return false
            }
            return !inFence
        }
    }
}
