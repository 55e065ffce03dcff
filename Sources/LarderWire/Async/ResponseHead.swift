/// The status line and headers of an HTTP/1.1 response.
public struct ResponseHead: Sendable {
    public let status: Int
    /// In the order received, names as sent.
    public let headers: [(name: String, value: String)]
    /// HTTP/1.0 (a proxy, an old server): its connection closes after the
    /// answer unless it says `keep-alive`.
    public let isHTTP10: Bool

    public init(status: Int, headers: [(name: String, value: String)], isHTTP10: Bool = false) {
        self.status = status
        self.headers = headers
        self.isHTTP10 = isHTTP10
    }

    /// The first value of header `name` (case-insensitive).
    public func value(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Whether the server said it closes the connection after this answer.
    var closesConnection: Bool {
        let connection = value("Connection")?.lowercased() ?? ""
        return connection.contains("close") || (isHTTP10 && !connection.contains("keep-alive"))
    }
}

extension String {
    /// ASCII case-insensitive equality, as header names compare.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        var mine = self
        var theirs = other
        return mine.withUTF8 { a in
            theirs.withUTF8 { b in
                guard a.count == b.count else { return false }
                for i in 0..<a.count where a[i] != b[i] {
                    let lower = a[i] | 0x20
                    guard lower == b[i] | 0x20, lower >= 0x61, lower <= 0x7A else { return false }
                }
                return true
            }
        }
    }
}
