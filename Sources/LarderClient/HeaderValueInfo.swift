import Foundation

/// A value's `ValueInfo` as a GET or HEAD answer tells it in headers
/// (`ETag`, `Content-Type`, `Content-Length`, `Last-Modified`,
/// `Larder-Expires`, `Larder-Source`). The size on disk is not sent, so
/// `storedSize` is nil.
enum HeaderValueInfo {
    /// - Parameter size: the body's length for a GET; nil reads `Content-Length` (HEAD).
    static func info(key: String, answer: HTTPAnswer, size: Int?) throws -> ValueInfo {
        guard let etag = answer[header: "ETag"] else {
            throw LarderError.server(status: answer.status, error: ErrorBody(ErrorCode("missing_etag"),
                                                                            "the answer for '\(key)' has no ETag"))
        }
        return ValueInfo(
            key: key,
            size: size ?? answer[header: "Content-Length"].flatMap { Int($0) } ?? 0,
            storedSize: nil,
            contentType: answer[header: "Content-Type"] ?? "application/octet-stream",
            etag: etag,
            modified: answer[header: "Last-Modified"].flatMap(HTTPDateParser.parse) ?? Timestamp(nanoseconds: 0),
            expires: answer[header: "Larder-Expires"].flatMap(HTTPDateParser.parse),
            source: answer[header: "Larder-Source"].flatMap(ValueSource.init(rawValue:)) ?? .store)
    }
}
