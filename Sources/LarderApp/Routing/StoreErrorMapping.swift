import LarderHTTP
import LarderRouting
import LarderStorage
import LarderValueFile
import LarderSharing
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// The one place a failure becomes an HTTP answer: store errors by kind,
/// `HTTPError`s as they are (routes and write conditions throw those), and
/// anything else as 500. Server faults are logged.
enum ErrorMapping {
    static func httpError(_ error: any Error, logger: Logger, context: @autoclosure () -> String = "store") -> HTTPError {
        if let e = error as? HTTPError { return e }
        if let e = error as? JSONUpdateError { return e.httpError }
        guard let e = error as? StoreError else {
            logger.error("\(context()): \(error)")
            return HTTPError(.internalServerError, .internalError, "\(error)")
        }
        if e.isServerFault { logger.error("\(context()): \(e)") }
        return e.httpError
    }

    /// Runs `body`, turning its errors into HTTP answers; a server fault is
    /// logged with `context` (which names the request).
    static func run<T>(_ logger: Logger, context: @autoclosure () -> String = "store", _ body: () throws -> T) throws(HTTPError) -> T {
        do {
            return try body()
        } catch {
            throw httpError(error, logger: logger, context: context())
        }
    }
}

extension StoreError {
    /// The HTTP answer for a store failure.
    var httpError: HTTPError {
        switch self {
        case .invalidKey(let why): HTTPError(.badRequest, .invalidKey, why)
        case .notFound: HTTPError(.notFound, .notFound, "no value is stored under this key")
        case .invalidGzip(let why): HTTPError(.badRequest, .invalidGzip, "the body is not valid gzip: \(why)")
        case .tooLarge(let limit):
            HTTPError(.payloadTooLarge, .payloadTooLarge, "the value is larger than \(limit) bytes", closeConnection: true)
        case .invalidContentType(let why): HTTPError(.badRequest, .invalidContentType, "the Content-Type cannot be stored: \(why)")
        case .invalidAttributes: HTTPError(.badRequest, .invalidArgument, description)
        case .io(_, _, let code) where code == ENOSPC || code == EDQUOT:
            HTTPError(HTTPStatus(507, "Insufficient Storage"), .insufficientStorage, "the disk is full: \(description)")
        // The shared store-level conditions (`WriteConditions`) fail as the HTTP ones do.
        case .preconditionFailed: Preconditions.failed
        case .contention:
            HTTPError(.serviceUnavailable, .busy, description, headers: [("Retry-After", "1")])
        case .backendUnavailable:
            HTTPError(.serviceUnavailable, .backendUnavailable, description, headers: [("Retry-After", "1")])
        case .io, .corrupt, .zlib, .locked, .invalidFixtures:
            HTTPError(.internalServerError, .internalError, description)
        }
    }

    /// Whether the failure is the server's fault (logged as an error).
    var isServerFault: Bool {
        switch self {
        case .io, .corrupt, .zlib, .locked, .invalidFixtures: true
        default: false
        }
    }
}

extension JSONUpdateError {
    /// The HTTP answer for a JSON update the JSON refused.
    var httpError: HTTPError {
        switch self {
        case .bodyNotJSON: HTTPError(.badRequest, .invalidJSON, description)
        case .storedNotJSON: HTTPError(.conflict, .notJSON, description)
        // The body sink refuses such a body first; the same answer.
        case .bodyTooLarge(let limit):
            HTTPError(.payloadTooLarge, .payloadTooLarge, "a JSON update body may be at most \(limit) bytes", closeConnection: true)
        }
    }
}

/// Adapts the store's byte stream to the HTTP layer's, which know nothing of each other.
final class StoreBodyStream: HTTPBodyStream {
    private let base: ValueByteStream
    init(_ base: ValueByteStream) { self.base = base }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { try base.read(into: buffer) }
    func close() { base.close() }
}
