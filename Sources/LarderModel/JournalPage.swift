/// `GET /journal` (docs/http-api.md "Request journal"): the recorded
/// requests after `since` that match the filters, oldest first; `next` is
/// the `since` of the next call, `dropped` how many requests the journal
/// let go of (it keeps the last `--journal N`) since it was last emptied.
public struct JournalPage: Codable, Sendable, Hashable {
    public var requests: [JournalEntry]
    public var next: UInt64
    public var dropped: UInt64

    public init(requests: [JournalEntry], next: UInt64, dropped: UInt64) {
        self.requests = requests
        self.next = next
        self.dropped = dropped
    }
}

/// One answered request as the journal keeps it: no body, and any
/// `access_token` in the query redacted. Absent fields are `null`; `op`
/// (an S3 request's operation) is left out when there is none.
public struct JournalEntry: Codable, Sendable, Hashable {
    /// Rises by one per recorded request of the namespace, never reused
    /// (not even after the journal is emptied).
    public var seq: UInt64
    /// When the request's head was read, UTC with milliseconds.
    public var time: String
    public var method: String
    /// The path inside the namespace, as sent (percent-encoded).
    public var path: String
    public var query: String?
    /// nil: no answer was sent (the connection was reset before the
    /// request was handled, a `drop: before` fault).
    public var status: Int?
    /// From the head to the answer, in milliseconds.
    public var ms: Double
    /// Bytes of the request body and of the answer's body.
    public var bytesIn: Int64
    public var bytesOut: Int64
    /// The ETag of the value written or read, when there is one.
    public var etag: String?
    /// The name of the fault rule that acted on the request.
    public var fault: String?
    /// The S3 operation's name (`PutObject`), for requests to the S3 face.
    public var op: String?

    public init(seq: UInt64, time: String, method: String, path: String, query: String?, status: Int?, ms: Double,
                bytesIn: Int64, bytesOut: Int64, etag: String?, fault: String?, op: String? = nil) {
        self.seq = seq
        self.time = time
        self.method = method
        self.path = path
        self.query = query
        self.status = status
        self.ms = ms
        self.bytesIn = bytesIn
        self.bytesOut = bytesOut
        self.etag = etag
        self.fault = fault
        self.op = op
    }

    enum CodingKeys: String, CodingKey {
        case seq, time, method, path, query, status, ms, bytesIn, bytesOut, etag, fault, op
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(seq, forKey: .seq)
        try c.encode(time, forKey: .time)
        try c.encode(method, forKey: .method)
        try c.encode(path, forKey: .path)
        try c.encodeOrNull(query, forKey: .query)
        try c.encodeOrNull(status, forKey: .status)
        try c.encode(ms, forKey: .ms)
        try c.encode(bytesIn, forKey: .bytesIn)
        try c.encode(bytesOut, forKey: .bytesOut)
        try c.encodeOrNull(etag, forKey: .etag)
        try c.encodeOrNull(fault, forKey: .fault)
        try c.encodeIfPresent(op, forKey: .op)
    }
}
