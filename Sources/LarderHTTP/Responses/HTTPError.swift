import LarderModel

/// An error that is an HTTP answer: a status and the JSON body of docs/http-api.md,
/// `{"error": code, "message": sentence}`.
public struct HTTPError: Error, CustomStringConvertible {
    public let status: HTTPStatus
    public let code: ErrorCode
    public let message: String
    public var headers: [(String, String)]
    /// Close the connection after answering (framing errors, unread bodies).
    public var closeConnection: Bool

    public init(_ status: HTTPStatus, _ code: ErrorCode, _ message: String,
                headers: [(String, String)] = [], closeConnection: Bool = false) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.closeConnection = closeConnection
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    public var response: HTTPResponse {
        var r = HTTPResponse.json(status, ErrorBody(code, message), headers: headers)
        r.closeConnection = closeConnection
        return r
    }
}

/// Minimal JSON text helpers, for bodies built by hand.
public enum JSON {
    /// `s` as a JSON string literal, quotes included.
    public static func quote(_ s: String) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
        return out
    }
}
