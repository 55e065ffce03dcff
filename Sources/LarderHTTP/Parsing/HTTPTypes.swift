/// Request methods. Known ones are matched from bytes without a String.
package enum HTTPMethod: Equatable, Sendable, CustomStringConvertible {
    case get, head, put, post, patch, delete, options
    case other(String)

    package var description: String {
        switch self {
        case .get: "GET"
        case .head: "HEAD"
        case .put: "PUT"
        case .post: "POST"
        case .patch: "PATCH"
        case .delete: "DELETE"
        case .options: "OPTIONS"
        case .other(let name): name
        }
    }
}

package enum HTTPVersion: Sendable, Equatable {
    case http10, http11
}

/// A status code with its reason phrase.
package struct HTTPStatus: Sendable, Equatable, CustomStringConvertible {
    package let code: Int
    package let reason: String

    package init(_ code: Int, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    package var description: String { "\(code) \(reason)" }

    package static let `continue` = HTTPStatus(100, "Continue")
    package static let ok = HTTPStatus(200, "OK")
    package static let created = HTTPStatus(201, "Created")
    package static let noContent = HTTPStatus(204, "No Content")
    package static let partialContent = HTTPStatus(206, "Partial Content")
    package static let notModified = HTTPStatus(304, "Not Modified")
    package static let badRequest = HTTPStatus(400, "Bad Request")
    package static let unauthorized = HTTPStatus(401, "Unauthorized")
    package static let forbidden = HTTPStatus(403, "Forbidden")
    package static let notFound = HTTPStatus(404, "Not Found")
    package static let methodNotAllowed = HTTPStatus(405, "Method Not Allowed")
    package static let requestTimeout = HTTPStatus(408, "Request Timeout")
    package static let conflict = HTTPStatus(409, "Conflict")
    package static let lengthRequired = HTTPStatus(411, "Length Required")
    package static let preconditionFailed = HTTPStatus(412, "Precondition Failed")
    package static let payloadTooLarge = HTTPStatus(413, "Content Too Large")
    package static let uriTooLong = HTTPStatus(414, "URI Too Long")
    package static let unsupportedMediaType = HTTPStatus(415, "Unsupported Media Type")
    package static let rangeNotSatisfiable = HTTPStatus(416, "Range Not Satisfiable")
    package static let expectationFailed = HTTPStatus(417, "Expectation Failed")
    package static let headersTooLarge = HTTPStatus(431, "Request Header Fields Too Large")
    package static let internalServerError = HTTPStatus(500, "Internal Server Error")
    package static let notImplemented = HTTPStatus(501, "Not Implemented")
    package static let serviceUnavailable = HTTPStatus(503, "Service Unavailable")
    package static let versionNotSupported = HTTPStatus(505, "HTTP Version Not Supported")
}
