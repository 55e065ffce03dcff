/// Every error answer's JSON body (docs/http-api.md):
/// `{"error": "<code>", "message": "<human sentence>"}`.
public struct ErrorBody: Codable, Sendable, Hashable {
    public var error: ErrorCode
    public var message: String

    public init(_ error: ErrorCode, _ message: String) {
        self.error = error
        self.message = message
    }
}
