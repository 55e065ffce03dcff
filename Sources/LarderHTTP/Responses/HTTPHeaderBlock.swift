/// Header fields formatted once, in wire form (`Name: value\r\n` each), for
/// an answer sent many times with the same fields: a cached value's head is
/// kept with it (`CachedValueMemo`), and each hit costs one copy instead of
/// formatting every field again. The fields are kept too, for what reads a
/// response's headers before it goes out (observers, middleware).
public final class HTTPHeaderBlock: Sendable {
    public let fields: [(String, String)]
    let bytes: [UInt8]
    /// Whether one of the fields is Content-Length (the encoder then adds none).
    let hasContentLength: Bool
    /// The ETag field's value, found once: observers (the request journal)
    /// ask every answer for it.
    public let etag: String?

    public init(_ fields: [(String, String)]) {
        self.fields = fields
        var bytes: [UInt8] = []
        var hasContentLength = false
        for (name, value) in fields {
            if name.utf8.count == 14 && name.lowercased() == "content-length" { hasContentLength = true }
            bytes += name.utf8
            bytes += ": ".utf8
            bytes += value.utf8
            bytes += "\r\n".utf8
        }
        self.bytes = bytes
        self.hasContentLength = hasContentLength
        self.etag = fields.first { $0.0.lowercased() == "etag" }?.1
    }
}
