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
                            _ body: (_ name: ArraySlice<UInt8>, _ value: ArraySlice<UInt8>?) -> Void) {
        // One copy into an array: indexing a Substring's UTF-8 view byte by
        // byte cost more than the copy.
        let bytes = query.utf8.withContiguousStorageIfAvailable { Array($0) } ?? Array(query.utf8)
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != 0x26 { end += 1 }
            if start < end {
                var eq = start
                while eq < end && bytes[eq] != 0x3D { eq += 1 }
                body(bytes[start..<eq], eq < end ? bytes[(eq + 1)..<end] : nil)
            }
            start = end + 1
        }
    }

    var names: [String] { pairs.map(\.name) }

    func has(_ name: String) -> Bool { pairs.contains { $0.name == name } }

    subscript(name: String) -> String? { pairs.first { $0.name == name }?.value }
}
