/// Everything a Larder call fails with, embedded or over HTTP.
public enum LarderError: Error, Sendable, CustomStringConvertible {
    /// No value under the key (or it expired).
    case notFound(key: String)
    /// A `SaveCondition` did not hold: another writer got there first.
    case preconditionFailed(key: String)
    /// The key breaks a key rule (docs/http-api.md "Keys"); `reason` says which.
    case invalidKey(String, reason: String)
    /// An append to a value that is not JSON, or JSON that does not parse.
    case notJSON(key: String, reason: String)
    /// The value could not be written (disk full, I/O error, too large).
    case cannotWrite(key: String, reason: String)
    /// A stored value did not decode as the type asked for.
    case cannotDecode(key: String, type: String, underlying: any Error)
    /// A value did not encode.
    case cannotEncode(key: String, type: String, underlying: any Error)
    /// Another process (a server, or another embedded store) has the data
    /// directory open; only one may at a time.
    case directoryLocked(path: String, reason: String)
    /// The server could not be reached, or the connection failed.
    case unreachable(url: String, reason: String)
    /// The request went out and the connection broke before its answer was
    /// whole (`loss` says how). For a write (`method` PUT, PATCH, POST or
    /// DELETE) the outcome is unknown: the server may have done it, so a
    /// retry should be conditional (`If-None-Match: *`, `If-Match`).
    case connectionLost(url: String, method: String, loss: ConnectionLoss)
    /// Any other answer from the server: its status and JSON error.
    case server(status: Int, error: ErrorBody)

    /// The HTTP status this error is (over HTTP) or would be (embedded).
    public var status: Int? {
        switch self {
        case .notFound: 404
        case .preconditionFailed: 412
        case .invalidKey: 400
        case .notJSON: 409
        case .cannotWrite: 507
        case .server(let status, _): status
        case .cannotDecode, .cannotEncode, .directoryLocked, .unreachable, .connectionLost: nil
        }
    }

    public var description: String {
        switch self {
        case .notFound(let key): "no value is stored under '\(key)'"
        case .preconditionFailed(let key): "the condition on '\(key)' does not hold: another writer changed it"
        case .invalidKey(let key, let reason): "invalid key '\(key)': \(reason)"
        case .notJSON(let key, let reason): "'\(key)': \(reason)"
        case .cannotWrite(let key, let reason): "cannot write '\(key)': \(reason)"
        case .cannotDecode(let key, let type, let error): "the value of '\(key)' does not decode as \(type): \(error)"
        case .cannotEncode(let key, let type, let error): "a \(type) for '\(key)' does not encode: \(error)"
        case .directoryLocked(let path, let reason): "\(path) is in use: \(reason)"
        case .unreachable(let url, let reason): "cannot reach \(url): \(reason)"
        case .server(let status, let body): "\(status) \(body.error): \(body.message)"
        case .connectionLost(let url, let method, let loss):
            "\(method) \(url): \(loss)" + (Self.isWrite(method) ? "; the write's outcome is unknown: it may have been done" : "")
        }
    }

    /// Whether the request failed in a way that leaves a write's outcome
    /// unknown (a write whose connection broke before its answer).
    public var outcomeUnknown: Bool {
        if case .connectionLost(_, let method, _) = self { return Self.isWrite(method) }
        return false
    }

    private static func isWrite(_ method: String) -> Bool { !["GET", "HEAD", "OPTIONS"].contains(method.uppercased()) }
}
