/// The status line and headers of an HTTP/1.1 response.
public struct ResponseHead: Sendable {
    public let status: Int
    /// In the order received, names as sent.
    public let headers: [(name: String, value: String)]

    public init(status: Int, headers: [(name: String, value: String)]) {
        self.status = status
        self.headers = headers
    }

    /// The first value of header `name` (case-insensitive).
    public func value(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Whether the server said it closes the connection after this answer.
    var closesConnection: Bool {
        value("Connection").map { $0.lowercased().contains("close") } ?? false
    }
}

extension String {
    /// ASCII case-insensitive equality, as header names compare.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        utf8.count == other.utf8.count && zip(utf8, other.utf8).allSatisfy { a, b in
            a == b || (a | 0x20 == b | 0x20 && (a | 0x20) >= 0x61 && (a | 0x20) <= 0x7A)
        }
    }
}
