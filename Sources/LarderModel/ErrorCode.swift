/// The `error` member of every JSON error body (docs/http-api.md), one constant per
/// code the server answers with. A struct rather than an enum so that a client
/// decodes a code a newer server invents instead of failing on it.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }

    public static let invalidKey = ErrorCode("invalid_key")
    public static let invalidArgument = ErrorCode("invalid_argument")
    public static let invalidGzip = ErrorCode("invalid_gzip")
    public static let invalidContentType = ErrorCode("invalid_content_type")
    public static let invalidJSON = ErrorCode("invalid_json")
    public static let invalidSnapshot = ErrorCode("invalid_snapshot")
    public static let clockBackwards = ErrorCode("clock_backwards")
    public static let notJSON = ErrorCode("not_json")
    public static let notFound = ErrorCode("not_found")
    public static let methodNotAllowed = ErrorCode("method_not_allowed")
    public static let unauthorized = ErrorCode("unauthorized")
    public static let originNotAllowed = ErrorCode("origin_not_allowed")
    public static let preconditionFailed = ErrorCode("precondition_failed")
    public static let rangeNotSatisfiable = ErrorCode("range_not_satisfiable")
    public static let payloadTooLarge = ErrorCode("payload_too_large")
    public static let unsupportedEncoding = ErrorCode("unsupported_encoding")
    public static let unsupportedMediaType = ErrorCode("unsupported_media_type")
    public static let insufficientStorage = ErrorCode("insufficient_storage")
    public static let unhealthy = ErrorCode("unhealthy")
    public static let busy = ErrorCode("busy")
    /// The store's database cannot be reached or is restarting (503, with `Retry-After`).
    public static let backendUnavailable = ErrorCode("backend_unavailable")
    public static let invalidRule = ErrorCode("invalid_rule")
    public static let faultInjected = ErrorCode("fault_injected")
    public static let internalError = ErrorCode("internal_error")
    /// A `/ns/<name>/` whose name breaks the rules (400).
    public static let invalidNamespace = ErrorCode("invalid_namespace")
    /// One namespace more than `--max-namespaces` (507).
    public static let namespaceLimit = ErrorCode("namespace_limit")
    /// `/ns/...` on a store that has no namespaces (501).
    public static let namespacesUnsupported = ErrorCode("namespaces_unsupported")
    // The HTTP layer's own answers, before any route runs.
    public static let badRequest = ErrorCode("bad_request")
    public static let requestTimeout = ErrorCode("request_timeout")
    public static let uriTooLong = ErrorCode("uri_too_long")
    public static let headersTooLarge = ErrorCode("headers_too_large")
    public static let versionNotSupported = ErrorCode("version_not_supported")
    public static let expectationFailed = ErrorCode("expectation_failed")
    public static let notImplemented = ErrorCode("not_implemented")
}
