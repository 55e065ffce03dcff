import LarderHTTP

/// Every `error` code the application answers with (API.md), in one place.
public enum ErrorCode: String, Sendable {
    case invalidKey = "invalid_key"
    case invalidArgument = "invalid_argument"
    case invalidGzip = "invalid_gzip"
    case invalidContentType = "invalid_content_type"
    case invalidJSON = "invalid_json"
    case invalidSnapshot = "invalid_snapshot"
    case notJSON = "not_json"
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    case unauthorized
    case originNotAllowed = "origin_not_allowed"
    case preconditionFailed = "precondition_failed"
    case rangeNotSatisfiable = "range_not_satisfiable"
    case payloadTooLarge = "payload_too_large"
    case unsupportedEncoding = "unsupported_encoding"
    case unsupportedMediaType = "unsupported_media_type"
    case insufficientStorage = "insufficient_storage"
    case unhealthy
    case busy
    case invalidRule = "invalid_rule"
    case faultInjected = "fault_injected"
    case internalError = "internal_error"
}

extension HTTPError {
    init(_ status: HTTPStatus, _ code: ErrorCode, _ message: String,
         headers: [(String, String)] = [], closeConnection: Bool = false) {
        self.init(status, code.rawValue, message, headers: headers, closeConnection: closeConnection)
    }
}
