import LarderModel
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
    /// Pulled like `.stream` as the socket drains, when the length is not
    /// known before the end (a snapshot): sent with chunked coding (to an
    /// HTTP/1.0 client, until the connection closes). `read` returning 0
    /// ends it.
    case unsizedStream(HTTPBodyStream)
    /// Written by the application whenever it has something (an event
    /// stream): sent with chunked coding, open until the stream finishes.
    case push(HTTPPushStream)
    /// A region of an open file (after a small prefix from memory), sent
    /// with `sendfile(2)` as the socket drains.
    case file(HTTPFileRegion)
}

/// A response. The encoder adds `Date`, `Server`, `Content-Length` or
/// `Transfer-Encoding` (unless given), and `Connection: close` when it closes;
/// for HEAD it sends the head of the same response and no body.
///
/// `@unchecked Sendable`: a response is built on one thread and handed to the
/// connection's queue (a deferred answer); after the hand-off only that queue
/// touches it, so its body stream is never used from two threads.
public struct HTTPResponse: @unchecked Sendable {
    public var status: HTTPStatus
    public var headers: [(String, String)]
    /// Fields formatted before, sent after `headers` (a cached value's head).
    public var headerBlock: HTTPHeaderBlock?
    public var body: HTTPResponseBody
    /// Close the connection after this response.
    public var closeConnection = false
    /// A fault of the network the connection acts out instead of sending
    /// this answer plainly (`--allow-faults`); nil: sent as usual.
    public var networkFault: HTTPNetworkFault?

    public init(status: HTTPStatus, headers: [(String, String)] = [], headerBlock: HTTPHeaderBlock? = nil,
                body: HTTPResponseBody = .empty) {
        self.status = status
        self.headers = headers
        self.headerBlock = headerBlock
        self.body = body
    }

    /// A JSON body: `value` encoded as the model's types are (`ModelJSON`).
    public static func json<T: Encodable>(_ status: HTTPStatus, _ value: T, headers: [(String, String)] = []) -> HTTPResponse {
        json(status, bytes: ModelJSON.encode(value), headers: headers)
    }

    /// JSON text built by hand is what the model's types replace; this
    /// overload keeps a `String` from being encoded as one JSON string.
    @available(*, unavailable, message: "encode a LarderModel type, or pass bytes that are already JSON")
    public static func json(_ status: HTTPStatus, _ json: String, headers: [(String, String)] = []) -> HTTPResponse {
        fatalError("unavailable")
    }

    /// A JSON body from bytes that are already JSON.
    public static func json(_ status: HTTPStatus, bytes: [UInt8], headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: .bytes(bytes))
    }

    /// The first value of a header the response carries (case-insensitive).
    public func header(_ name: String) -> String? {
        let matches = { (field: (String, String)) in field.0.utf8.count == name.utf8.count && field.0.lowercased() == name.lowercased() }
        return headers.first(where: matches)?.1 ?? headerBlock?.fields.first(where: matches)?.1
    }

    /// Moves the block's fields into `headers`, for a change to a field the
    /// block holds (joining a `Vary`).
    public mutating func expandHeaderBlock() {
        guard let headerBlock else { return }
        headers += headerBlock.fields
        self.headerBlock = nil
    }

    /// Releases what the body holds (an open file) when the response is dropped unsent.
    public func discardBody() { body.discard() }
}

extension HTTPResponseBody {
    /// Releases what the body holds (a stream, a file, a push stream's
    /// writer) when it will not be sent.
    func discard() {
        switch self {
        case .stream(let s, _), .unsizedStream(let s): s.close()
        case .push(let p): p.connectionClosed()
        case .file(let f): f.close()
        case .empty, .bytes: break
        }
    }
}
