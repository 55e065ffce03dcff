import Foundation

/// The fenced code blocks of the repository's Markdown (README.md, docs/)
/// that the tests run or compare, each found by the HTML comment on the line
/// before it: `<!-- example: name -->`, `<!-- output: name -->`,
/// `<!-- swift-timeline -->`. So a documented example is a tested example,
/// wherever the guide that holds it lives.
package enum DocExample {
    /// The body of the block marked `marker` in `file` (a path from the
    /// repository root, e.g. `docs/test-suites.md`), every line with its
    /// line feed. Throws, naming the file and marker, when there is none.
    package static func block(_ file: String, _ marker: String) throws -> String {
        let text = try String(contentsOfFile: Repository.path(file), encoding: .utf8)
        guard let found = fencedBlock(in: text, after: marker) else {
            throw ExampleError("no ``` block right after <!-- \(marker) --> in \(file)")
        }
        return found.body
    }

    /// The fenced block that opens on the line right after
    /// `<!-- marker -->`: its info string (`sh`, `swift`, or empty) and its
    /// body. Nil when the marker is missing or the next line is not a fence:
    /// a block further down belongs to something else.
    package static func fencedBlock(in text: String, after marker: String) -> (info: String, body: String)? {
        guard let tag = text.range(of: "<!-- \(marker) -->\n") else { return nil }
        let rest = text[tag.upperBound...]
        guard rest.hasPrefix("```"), let fenceEnd = rest.firstIndex(of: "\n") else { return nil }
        let info = rest[rest.index(rest.startIndex, offsetBy: 3)..<fenceEnd].trimmingCharacters(in: .whitespaces)
        let bodyStart = rest.index(after: fenceEnd)
        if rest[bodyStart...].hasPrefix("```") { return (info, "") }
        guard let close = rest.range(of: "\n```", range: bodyStart..<rest.endIndex) else { return nil }
        return (info, String(rest[bodyStart...close.lowerBound]))
    }

    /// Every `name` of `<!-- kind: name -->` in `text` (kind `example` or `output`), in order.
    package static func markers(_ kind: String, in text: String) -> [String] {
        text.matches(of: /<!-- (example|output): ([A-Za-z0-9_-]+) -->/).compactMap {
            $0.output.1 == kind ? String($0.output.2) : nil
        }
    }

    /// The Markdown files the examples and links live in: README.md,
    /// ARCHITECTURE.md when present, and docs/*.md, as repository paths.
    package static var markdownFiles: [String] {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: Repository.path("docs"))) ?? []
        let top = ["README.md", "ARCHITECTURE.md"].filter { FileManager.default.fileExists(atPath: Repository.path($0)) }
        return top + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }

    /// What differs from run to run in an example's output, made equal:
    /// 16-hex-digit ids (versions, ETags, generated keys), ISO 8601 times
    /// and the request journal's durations (`"ms":0.42`).
    package static func normalized(_ text: String) -> String {
        text.replacingOccurrences(of: "[0-9a-f]{16}", with: "<id>", options: .regularExpression)
            .replacingOccurrences(of: #"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"#, with: "<time>", options: .regularExpression)
            .replacingOccurrences(of: #""ms":\d+(\.\d+)?"#, with: #""ms":<ms>"#, options: .regularExpression)
    }
}

package struct ExampleError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
