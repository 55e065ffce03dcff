import LarderHTTP
import LarderStore
#if canImport(Glibc)
import Glibc
#endif

extension StoreError {
    /// The HTTP answer for a store failure.
    var httpError: HTTPError {
        switch self {
        case .invalidKey(let why): HTTPError(.badRequest, "invalid_key", why)
        case .notFound: HTTPError(.notFound, "not_found", "no value is stored under this key")
        case .invalidGzip(let why): HTTPError(.badRequest, "invalid_gzip", "the body is not valid gzip: \(why)")
        case .tooLarge(let limit):
            HTTPError(.payloadTooLarge, "payload_too_large", "the value decompresses to more than \(limit) bytes", closeConnection: true)
        case .invalidContentType(let why): HTTPError(.badRequest, "invalid_content_type", "the Content-Type cannot be stored: \(why)")
        case .io(_, _, let code) where code == ENOSPC || code == EDQUOT:
            HTTPError(HTTPStatus(507, "Insufficient Storage"), "insufficient_storage", "the disk is full: \(description)")
        case .io, .corrupt, .zlib, .locked:
            HTTPError(.internalServerError, "internal_error", description)
        }
    }

    /// Whether the failure is the server's fault (logged as an error).
    var isServerFault: Bool {
        switch self {
        case .io, .corrupt, .zlib, .locked: true
        default: false
        }
    }
}

extension ValueByteStream {
    /// Wraps a store stream as an HTTP body stream.
    var httpBody: HTTPBodyStream { StoreBodyStream(self) }
}

/// Adapts the store's byte stream to the HTTP layer's, which know nothing of each other.
final class StoreBodyStream: HTTPBodyStream {
    private let base: ValueByteStream
    init(_ base: ValueByteStream) { self.base = base }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { try base.read(into: buffer) }
    func close() { base.close() }
}
