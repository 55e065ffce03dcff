/// A parsed request line and header section.
public struct HTTPRequestHead: Sendable {
    public let method: HTTPMethod
    public let version: HTTPVersion
    /// The target as sent (origin-form; absolute-form is reduced to it).
    /// Bytes outside ASCII are percent-encoded here so nothing is lost.
    public let target: String
    public let headers: HTTPHeaders
    /// Declared body length; nil with chunked or no body.
    public let contentLength: Int64?
    public let isChunked: Bool
    public let expectsContinue: Bool
    /// False with `Connection: close` or HTTP/1.0.
    public let keepAlive: Bool

    /// The target up to `?`.
    public var path: Substring {
        if let q = target.utf8.firstIndex(of: 0x3F) { return target[..<q] }
        return target[...]
    }

    /// The target after `?`, if any.
    public var query: Substring? {
        guard let q = target.utf8.firstIndex(of: 0x3F) else { return nil }
        return target[target.utf8.index(after: q)...]
    }

    public var hasBody: Bool { isChunked || (contentLength ?? 0) > 0 }
}
