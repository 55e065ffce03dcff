import LarderValueFile

/// A request's query parameters, percent-decoded (`+` kept as it is, as
/// S3 reads it). A name without `=` has the empty value (`?location`).
struct S3Query: Sendable {
    private var pairs: [(name: String, value: String)] = []

    init(_ query: Substring?) {
        guard let query else { return }
        // By bytes, not Characters: a query is ASCII here (the HTTP layer
        // percent-encodes the rest), and splitting Substrings by Character
        // cost a presigned URL's request more than its signature did.
        Self.forEachPair(query) { name, value in
            pairs.append((String(decoding: AWSURIEncoding.decode(name), as: UTF8.self),
                          value.map { String(decoding: AWSURIEncoding.decode($0), as: UTF8.self) } ?? ""))
        }
    }

    /// Each `name[=value]` of `query`, as sent (not decoded), in order; empty items
    /// (`a&&b`) skipped. `value` is nil when there is no `=`.
    static func forEachPair(_ query: Substring,
                            _ body: (_ name: Substring.UTF8View.SubSequence, _ value: Substring.UTF8View.SubSequence?) -> Void) {
        let utf8 = query.utf8
        var start = utf8.startIndex
        while start < utf8.endIndex {
            let end = utf8[start...].firstIndex(of: 0x26) ?? utf8.endIndex
            if start < end {
                let item = utf8[start..<end]
                if let eq = item.firstIndex(of: 0x3D) {
                    body(item[..<eq], item[item.index(after: eq)...])
                } else {
                    body(item, nil)
                }
            }
            start = end < utf8.endIndex ? utf8.index(after: end) : end
        }
    }

    var names: [String] { pairs.map(\.name) }

    func has(_ name: String) -> Bool { pairs.contains { $0.name == name } }

    subscript(name: String) -> String? { pairs.first { $0.name == name }?.value }
}
