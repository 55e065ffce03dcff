import LarderHTTP
import LarderSupport
import LarderValueFile
import LarderStoreVocabulary

/// One S3 request being answered: its head, its responder, and the id S3
/// puts on every answer (`x-amz-request-id`, `<RequestId>`). Sendable: an
/// answer may come from the thread a store's reply arrives on.
struct S3Call: Sendable {
    let head: HTTPRequestHead
    let responder: HTTPResponder
    let requestID: String
    let logger: Logger
    /// For a browser's request (one naming an `Origin`): its bucket's CORS
    /// headers, which every answer carries (and waits for).
    var cors: CORSHeaders? = nil

    func respond(_ response: HTTPResponse) {
        var response = response
        response.headers.append(("x-amz-request-id", requestID))
        guard let cors else {
            responder.respond(response)
            return
        }
        let (responder, answer) = (self.responder, response)
        cors.whenKnown { headers in
            var response = answer
            response.headers += headers
            responder.respond(response)
        }
    }

    func fail(_ error: S3Error, closeConnection: Bool = false) {
        var response = error.response(resource: head.path, requestID: requestID)
        response.closeConnection = closeConnection
        respond(response)
    }

    /// Answers with what `body` makes of a store's reply (now or later);
    /// an `S3Error` it throws is answered as S3's error, anything else as
    /// S3's `InternalError` (and logged).
    func answer<T: Sendable>(_ reply: StoreReply<T>, _ body: @escaping @Sendable (Result<T, any Error>) throws -> HTTPResponse?) {
        reply.whenDone { result in
            do {
                if let response = try body(result) { respond(response) }
            } catch {
                fail(S3Call.s3Error(error, logger: logger, context: "\(head.method) \(head.path)"))
            }
        }
    }

    /// An error as S3 names it: a store's error mapped, an `S3Error` as is.
    static func s3Error(_ error: any Error, logger: Logger, context: String) -> S3Error {
        switch error {
        case let e as S3Error:
            return e
        case StoreError.invalidKey(let why):
            return .invalidArgument(why)
        case StoreError.invalidAttributes(let why):
            return S3Error(.badRequest, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size (\(why)).")
        case StoreError.invalidContentType(let why):
            return .invalidArgument("the Content-Type cannot be stored: \(why)")
        case StoreError.tooLarge(let limit):
            return .entityTooLarge(limit: limit)
        case StoreError.backendUnavailable(let why):
            return S3Error(.serviceUnavailable, "ServiceUnavailable", "Please reduce your request rate. (\(why))")
        case StoreError.preconditionFailed:
            return S3Error(.preconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
        default:
            logger.error("\(context): \(error)")
            return .internalError("\(error)")
        }
    }
}
