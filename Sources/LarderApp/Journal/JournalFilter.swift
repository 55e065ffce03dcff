import LarderHTTP
import LarderRouting

/// What `GET /journal` asks for: entries after `since` that match every
/// filter given, at most `limit` of them, and how long to wait for one.
struct JournalFilter: Sendable {
    var since: UInt64 = 0
    /// Decoded key bytes a store request's key must start with (S3 prefixes' rule).
    var keyPrefix: [UInt8]?
    /// Upper case.
    var method: String?
    enum StatusMatch: Sendable, Equatable {
        case exact(Int)
        /// `4xx`: every status of that hundred.
        case hundred(Int)
    }
    var status: StatusMatch?
    var limit: Int
    /// Seconds to wait for an entry when there is none yet (0: answer at once).
    var waitSeconds: Int = 0
    /// `?format=har`: the page as an HTTP Archive (`JournalHAR`), not as entries.
    var har = false

    /// `?wait` is capped at five minutes, as a key watch's is.
    static let maxWait = 300
    /// Entries a page holds at most (a listing's limit): a page is copied
    /// under the journal's lock.
    static let maxLimit = 10_000

    init(limit: Int) { self.limit = limit }

    /// Reads the query; 400 `invalid_argument` for a value it cannot use.
    init(_ query: Substring?, capacity: Int) throws(HTTPError) {
        let q = try QueryParameters(query)
        self.init(limit: max(1, min(capacity, Self.maxLimit)))
        if let text = q["since"] {
            guard let n = UInt64(text) else {
                throw HTTPError(.badRequest, .invalidArgument, "'since' must be a sequence number (a whole number from 0)")
            }
            since = n
        }
        if let p = q["prefix"] { keyPrefix = Array(p.utf8) }
        if let m = q["method"], !m.isEmpty { method = m.uppercased() }
        if let s = q["status"], !s.isEmpty {
            if let n = Int(s), (100...599).contains(n) {
                status = .exact(n)
            } else if s.count == 3, s.lowercased().hasSuffix("xx"), let h = Int(s.prefix(1)), (1...5).contains(h) {
                status = .hundred(h)
            } else {
                throw HTTPError(.badRequest, .invalidArgument, "'status' must be a status code (404) or a class (4xx)")
            }
        }
        limit = try q.integer("limit", default: limit, range: 1...limit, clampUpper: true)
        waitSeconds = try q.integer("wait", default: 0, range: 0...Int.max, clampUpper: true)
        waitSeconds = min(waitSeconds, Self.maxWait)
        switch q["format"] {
        case nil, "json": break
        case "har": har = true
        default: throw HTTPError(.badRequest, .invalidArgument, "'format' must be json or har")
        }
    }

    /// The key of an S3 request's path (path style): `b/k` of `/b/k`, the
    /// bucket's prefix `b/` of `/b` (its listings and the like, as a fault
    /// rule sees them), the empty key of `/` (ListBuckets).
    static func s3Key(of path: Substring) -> [UInt8]? {
        let rest = path.dropFirst()
        let storePath = rest.isEmpty || rest.contains("/") ? "/store" + path : "/store" + path + "/"
        return FaultRule.storeKey(of: storePath[...])
    }

    func matches(_ record: JournalRecord) -> Bool {
        guard record.seq > since else { return false }
        if let method, record.method.description != method { return false }
        if let status {
            let code = Int(record.status)
            switch status {
            case .exact(let n): if code != n { return false }
            case .hundred(let h): if code / 100 != h { return false }
            }
        }
        if let keyPrefix {
            guard let key = record.op == nil ? FaultRule.storeKey(of: record.path) : Self.s3Key(of: record.path),
                  key.starts(with: keyPrefix) else { return false }
        }
        return true
    }
}
