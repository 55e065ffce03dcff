import FoundationEssentials

/// One HTTP/1.1 request for a `WireConnection`: its head is written as
/// given (plus `Host` and, with a body, `Content-Length`), its body after it.
public struct WireRequest: Sendable {
    public var method: String
    /// The path and query, already percent-encoded.
    public var target: String
    public var headers: [(name: String, value: String)]
    public var body: Data?

    public init(method: String, target: String, headers: [(name: String, value: String)] = [], body: Data? = nil) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }

    /// Whether the answer has a body (not for HEAD).
    public var expectsBody: Bool { method != "HEAD" }

    /// Whether sending it twice does what sending it once does, so a
    /// request lost with a stale connection may be sent again (RFC 9110
    /// §9.2.2; PUT and DELETE are left out: with a condition, a repeat answers
    /// 412 for a write that was done).
    public var isSafe: Bool { method == "GET" || method == "HEAD" || method == "OPTIONS" }

    /// The request line and header section, ending with the blank line.
    func headBytes(host: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128 + target.utf8.count + headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 })
        bytes.append(contentsOf: method.utf8)
        bytes.append(0x20)
        bytes.append(contentsOf: target.utf8)
        bytes.append(contentsOf: " HTTP/1.1\r\nHost: ".utf8)
        bytes.append(contentsOf: host.utf8)
        bytes.append(contentsOf: "\r\n".utf8)
        for (name, value) in headers {
            // A CR or LF in a name or value (a content type, an ETag passed
            // on) would end the header early and inject another: a space.
            for byte in name.utf8 { bytes.append(byte == 0x0D || byte == 0x0A ? 0x20 : byte) }
            bytes.append(contentsOf: ": ".utf8)
            for byte in value.utf8 { bytes.append(byte == 0x0D || byte == 0x0A ? 0x20 : byte) }
            bytes.append(contentsOf: "\r\n".utf8)
        }
        if let body {
            bytes.append(contentsOf: "Content-Length: ".utf8)
            bytes.append(contentsOf: String(body.count).utf8)
            bytes.append(contentsOf: "\r\n".utf8)
        } else if method == "PUT" || method == "POST" || method == "PATCH" {
            bytes.append(contentsOf: "Content-Length: 0\r\n".utf8)
        }
        bytes.append(contentsOf: "\r\n".utf8)
        return bytes
    }
}
