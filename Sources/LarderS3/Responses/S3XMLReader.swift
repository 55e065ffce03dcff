import FoundationEssentials

/// Reads the few documents clients send S3 (a CORS or encryption
/// configuration) the way the rest of the face reads its documents: by
/// element name, without namespaces or attributes, text unescaped
/// (`DeleteRequest.unescape`). Enough for documents made by S3's clients.
enum S3XMLReader {
    /// The contents of each `<name>` element in `text`, in order (an
    /// element with attributes, `<name a="…">`, too).
    static func elements(_ name: String, in text: Substring) throws(S3Error) -> [Substring] {
        var found: [Substring] = []
        var rest = text
        while let open = rest.firstRange(of: "<\(name)") {
            let after = rest[open.upperBound...]
            guard let next = after.first else { throw DeleteRequest.malformed }
            // `<CORSRules>` is not `<CORSRule>`.
            guard next == ">" || next == " " else {
                rest = after
                continue
            }
            guard let end = after.firstIndex(of: ">"),
                  let close = rest[end..<rest.endIndex].firstRange(of: "</\(name)>") else { throw DeleteRequest.malformed }
            found.append(rest[rest.index(after: end)..<close.lowerBound])
            rest = rest[close.upperBound...]
        }
        return found
    }

    /// The unescaped, trimmed text of each `<name>` element.
    static func values(_ name: String, in text: Substring) throws(S3Error) -> [String] {
        try elements(name, in: text).map { (value: Substring) throws(S3Error) -> String in
            try DeleteRequest.unescape(Substring(value.trimmingWhitespaceAndNewlines()))
        }
    }
}
