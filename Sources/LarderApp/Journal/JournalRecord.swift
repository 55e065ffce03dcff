import LarderHTTP
import LarderRouting
import LarderModel

/// One answered request as the ring keeps it: what `JournalEntry` shows,
/// in a compact form that costs no allocation to make. The target is the
/// head's own string (a reference), with where the path inside the
/// namespace starts; the query is redacted and the time formatted only
/// when the entry is read. The header fields of both sides are kept as the
/// references the connection had (the head's bytes, the response's
/// array), for the HAR form (`JournalHAR`), and made into strings, redacted,
/// only then.
struct JournalRecord: Sendable {
    var seq: UInt64 = 0
    /// Wall clock at the head, nanoseconds since 1970.
    let startedNanos: Int64
    /// From the head to the answer.
    let durationNanos: Int64
    let method: HTTPMethod
    /// The request target as sent (`/ns/w1/store/a?x=1`); an S3 request's
    /// in path style (`/bucket/key?x`).
    var target: String
    /// An S3 request's target as sent when it differs from `target` (a
    /// virtual-hosted request's `/key?x`): the HAR's URL is made of it.
    var sentTarget: String?
    let version: HTTPVersion
    /// The request's head as it came (`HTTPAnsweredRequest.head`).
    let head: [UInt8]
    /// UTF-8 offset in `target` of the path inside the namespace (`/store/a`).
    let pathOffset: Int32
    /// 0: no answer was sent (a connection reset before the request was handled).
    let status: Int16
    /// The answer's header fields as the application gave them (the
    /// connection adds its framing fields, `Date` and `Connection`).
    let responseHeaders: [(String, String)]
    let responseBlock: HTTPHeaderBlock?
    let bytesIn: Int64
    let bytesOut: Int64
    let etag: String?
    let fault: String?
    var op: String?

    /// The path inside the namespace, without the query.
    var path: Substring {
        let start = target.utf8.index(target.startIndex, offsetBy: Int(pathOffset))
        let end = target.utf8[start...].firstIndex(of: UInt8(ascii: "?")) ?? target.endIndex
        return target[start..<end]
    }

    /// The query as sent, secrets redacted; nil when there is none.
    var query: String? {
        guard let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        let redacted = TargetRedaction.redact(target)
        // Redaction keeps everything up to the `?`, so its offset holds.
        let start = redacted.utf8.index(redacted.startIndex, offsetBy: target.utf8.distance(from: target.startIndex, to: q) + 1)
        return String(redacted[start...])
    }

    var entry: JournalEntry {
        JournalEntry(seq: seq, time: ISO8601.format(nanos: startedNanos, milliseconds: true), method: method.description,
                     path: String(path), query: query, status: status == 0 ? nil : Int(status),
                     ms: Double(durationNanos / 1000) / 1000, bytesIn: bytesIn, bytesOut: bytesOut,
                     etag: etag, fault: fault, op: op)
    }
}
