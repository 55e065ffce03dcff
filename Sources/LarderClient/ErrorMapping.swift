import Foundation

/// The one place an HTTP error answer becomes a `LarderError`, so every call
/// throws the same case the embedded store throws for the same failure.
enum ErrorMapping {
    /// The error for an answer with an unexpected `status` to a request about
    /// `key`. `appending`: the request was an append, whose unparsable body
    /// (`400 invalid_json`) is `notJSON` like a stored value that is not JSON.
    static func error(status: Int, body: Data, key: String, appending: Bool = false) -> LarderError {
        let error = errorBody(status: status, body: body)
        switch (status, error.error) {
        case (404, .notFound): return .notFound(key: key)
        case (412, _): return .preconditionFailed(key: key)
        case (400, .invalidKey): return .invalidKey(key, reason: error.message)
        case (_, .notJSON): return .notJSON(key: key, reason: error.message)
        case (400, .invalidJSON) where appending: return .notJSON(key: key, reason: error.message)
        // The embedded store throws `cannotWrite` for a full disk, a value
        // over the size limit and a content type it cannot store; so do we.
        case (507, _), (413, _), (400, .invalidContentType): return .cannotWrite(key: key, reason: error.message)
        default: return .server(status: status, error: error)
        }
    }

    /// The answer's JSON error body; for a body that is not one (a proxy's
    /// HTML page, an empty 502), `http_<status>` with the text.
    static func errorBody(status: Int, body: Data) -> ErrorBody {
        if let decoded = try? ModelJSON.decode(ErrorBody.self, from: body) { return decoded }
        let text = String(decoding: body.prefix(1024), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return ErrorBody(ErrorCode("http_\(status)"), text.isEmpty ? "HTTP status \(status)" : text)
    }
}
