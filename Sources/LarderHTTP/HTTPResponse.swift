/// A pull stream a response body is sent from: `read` fills the buffer and
/// returns the count, 0 at the end. `close` is called exactly once.
public protocol HTTPBodyStream: AnyObject {
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    func close()
}

public enum HTTPResponseBody {
    case empty
    case bytes([UInt8])
    /// Sent in pieces as the socket drains; exactly `length` bytes.
    case stream(HTTPBodyStream, length: Int64)
}

/// A response. The connection adds `Date`, `Server`, `Content-Length`
/// (unless given) and `Connection: close` when it closes.
public struct HTTPResponse {
    public var status: HTTPStatus
    public var headers: [(String, String)]
    public var body: HTTPResponseBody
    /// Close the connection after this response.
    public var closeConnection = false

    public init(status: HTTPStatus, headers: [(String, String)] = [], body: HTTPResponseBody = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON body; `json` must already be JSON text.
    public static func json(_ status: HTTPStatus, _ json: String, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers,
                     body: .bytes(Array(json.utf8)))
    }
}

/// An error that is an HTTP answer: a status and the JSON body of API.md,
/// `{"error": code, "message": sentence}`.
public struct HTTPError: Error, CustomStringConvertible {
    public let status: HTTPStatus
    public let code: String
    public let message: String
    public var headers: [(String, String)]
    /// Close the connection after answering (framing errors, unread bodies).
    public var closeConnection: Bool

    public init(_ status: HTTPStatus, _ code: String, _ message: String,
                headers: [(String, String)] = [], closeConnection: Bool = false) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.closeConnection = closeConnection
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    public var response: HTTPResponse {
        var r = HTTPResponse.json(status, "{\"error\":\(JSON.quote(code)),\"message\":\(JSON.quote(message))}", headers: headers)
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

/// What a handler does with a request head.
public enum HTTPHandlerAction {
    /// Answer now. A body the request still carries is skipped, or the
    /// connection is closed when it is large or `Expect: 100-continue` was sent.
    case respond(HTTPResponse)
    /// Stream the body into this sink (after `100 Continue` if asked for).
    case receiveBody(HTTPRequestBodySink)
}

/// Receives a request body piece by piece, on the connection's queue.
public protocol HTTPRequestBodySink: AnyObject {
    /// A piece of the body. Throwing ends the request: an `HTTPError` is sent
    /// as is, anything else as 500, and the connection closes.
    func write(_ chunk: UnsafeRawBufferPointer) throws
    /// The body is complete; the answer.
    func finish() -> HTTPResponse
    /// The request ended early (error, disconnect, timeout).
    func abort()
}

/// The application side of the server. Called on the connection's queue;
/// must not block for long (disk I/O is fine, waiting on other requests is not).
public protocol HTTPRequestHandler: Sendable {
    func handle(_ request: HTTPRequestHead) -> HTTPHandlerAction
}
