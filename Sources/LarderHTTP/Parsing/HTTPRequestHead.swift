#if canImport(Glibc)
import Glibc
#endif

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

    /// Where `?` is in the target, found once: routes ask for the path and
    /// the query several times per request.
    private let questionMark: String.Index?
    /// Where `path` starts: the target's start, or after a prefix a mount
    /// took off (`droppingPathPrefix`).
    private var pathStart: String.Index

    init(method: HTTPMethod, version: HTTPVersion, target: String, headers: HTTPHeaders, contentLength: Int64?,
         isChunked: Bool, expectsContinue: Bool, keepAlive: Bool) {
        self.method = method
        self.version = version
        self.target = target
        self.headers = headers
        self.contentLength = contentLength
        self.isChunked = isChunked
        self.expectsContinue = expectsContinue
        self.keepAlive = keepAlive
        self.questionMark = Self.firstQuestionMark(target)
        self.pathStart = target.startIndex
    }

    /// Where the first `?` is: `memchr` over the target's UTF-8 (the generic
    /// `firstIndex(of:)` of a string's view costs hundreds of instructions).
    private static func firstQuestionMark(_ target: String) -> String.Index? {
        let offset = target.utf8.withContiguousStorageIfAvailable { bytes -> Int? in
            guard let base = bytes.baseAddress, let found = memchr(base, 0x3F, bytes.count) else { return nil }
            return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
        }
        guard let offset else { return target.utf8.firstIndex(of: 0x3F) }
        return offset.map { target.utf8.index(target.startIndex, offsetBy: $0) }
    }

    /// The target up to `?` (less a prefix `droppingPathPrefix` took off).
    public var path: Substring {
        if let q = questionMark { return target[pathStart..<q] }
        return target[pathStart...]
    }

    /// The same request with the first `count` bytes of its path taken off
    /// (a mounted API: `/ns/w3/store/k` seen as `/store/k`); `target` stays
    /// as sent, for the access log. `count` must fall inside the path, on a
    /// character boundary (a path is ASCII). Costs no allocation.
    public func droppingPathPrefix(bytes count: Int) -> HTTPRequestHead {
        var mounted = self
        mounted.pathStart = target.utf8.index(pathStart, offsetBy: count)
        return mounted
    }

    /// The target after `?`, if any.
    public var query: Substring? {
        guard let q = questionMark else { return nil }
        return target[target.utf8.index(after: q)...]
    }

    public var hasBody: Bool { isChunked || (contentLength ?? 0) > 0 }
}
