import LarderValueFile

/// A request's query parameters, percent-decoded (`+` kept as it is, as
/// S3 reads it). A name without `=` has the empty value (`?location`).
struct S3Query: Sendable {
    private var pairs: [(name: String, value: String)] = []

    init(_ query: Substring?) {
        guard let query else { return }
        for item in query.split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(decoding: AWSURIEncoding.decode(parts[0]), as: UTF8.self)
            let value = parts.count > 1 ? String(decoding: AWSURIEncoding.decode(parts[1]), as: UTF8.self) : ""
            pairs.append((name, value))
        }
    }

    var names: [String] { pairs.map(\.name) }

    func has(_ name: String) -> Bool { pairs.contains { $0.name == name } }

    subscript(name: String) -> String? { pairs.first { $0.name == name }?.value }
}
