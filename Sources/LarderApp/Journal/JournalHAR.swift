import LarderHTTP
import LarderModel
import LarderSupport

/// The journal's records as an HTTP Archive 1.2 document
/// (`GET /journal?format=har`): what browsers' developer tools and HAR
/// viewers open. Made from the records a page selected, after the
/// journal's lock is let go.
///
/// Credentials never reach it: the values of the fields that carry them
/// (`Authorization`, cookies, session tokens) are replaced, and so are the
/// query's secret parameters, as the access log's are (`TargetRedaction`).
/// No body is kept, so `content` has its size and type only. The
/// response's fields are those the application gave: the connection's
/// framing fields (`Content-Length`, `Transfer-Encoding`), `Date` and
/// `Connection` are added when it is sent, and are not in the journal.
struct JournalHAR: Encodable {
    struct NameValue: Encodable {
        let name: String
        let value: String
    }

    struct Request: Encodable {
        let method: String
        let url: String
        let httpVersion: String
        let cookies: [NameValue] = []
        let headers: [NameValue]
        let queryString: [NameValue]
        /// Unknown (-1): the head's size is not kept.
        let headersSize = -1
        let bodySize: Int64
    }

    struct Content: Encodable {
        let size: Int64
        let mimeType: String
    }

    struct Response: Encodable {
        let status: Int
        let statusText: String
        let httpVersion: String
        let cookies: [NameValue] = []
        let headers: [NameValue]
        let content: Content
        let redirectURL: String
        let headersSize = -1
        let bodySize: Int64
    }

    /// The whole time is the server's (from the head to the answer): it
    /// is `wait`; sending and receiving are the client's side.
    struct Timings: Encodable {
        let send = 0.0
        let wait: Double
        let receive = 0.0
    }

    struct Cache: Encodable {}

    struct Entry: Encodable {
        let startedDateTime: String
        let time: Double
        let request: Request
        let response: Response
        let cache = Cache()
        let timings: Timings
        /// Larder's own: the journal's sequence number, the fault rule
        /// that acted and the S3 operation (HAR's custom fields start with `_`).
        let _seq: UInt64
        let _fault: String?
        let _op: String?
    }

    struct Creator: Encodable {
        let name = "larder"
        let version = LarderVersion.current
    }

    struct Log: Encodable {
        let version = "1.2"
        let creator = Creator()
        let entries: [Entry]
    }

    let log: Log

    /// Field names whose values are credentials, lower case.
    static let secretFields: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie",
                                            "x-amz-security-token"]

    init(_ records: [JournalRecord]) {
        log = Log(entries: records.map(Self.entry))
    }

    static func entry(_ record: JournalRecord) -> Entry {
        let requestFields = HTTPHeaders(head: record.head).map { NameValue(name: $0.name, value: redacted($0.name, $0.value)) }
        let host = requestFields.first { $0.name.lowercased() == "host" }?.value ?? "localhost"
        let target = TargetRedaction.redact(record.sentTarget ?? record.target)
        var responseFields = record.responseHeaders
        if let block = record.responseBlock { responseFields += block.fields }
        let mimeType = responseFields.first { $0.0.lowercased() == "content-type" }?.1 ?? ""
        let location = responseFields.first { $0.0.lowercased() == "location" }?.1 ?? ""
        let version = record.version == .http11 ? "HTTP/1.1" : "HTTP/1.0"
        let ms = Double(record.durationNanos / 1000) / 1000
        let answered = record.status != 0
        return Entry(
            startedDateTime: ISO8601.format(nanos: record.startedNanos, milliseconds: true),
            time: ms,
            request: Request(method: record.method.description, url: "http://\(host)\(target)", httpVersion: version,
                             headers: requestFields, queryString: queryString(target), bodySize: record.bytesIn),
            response: Response(status: Int(record.status), statusText: answered ? HTTPStatus.reasonPhrase(Int(record.status)) : "",
                               httpVersion: answered ? version : "",
                               headers: responseFields.map { NameValue(name: $0.0, value: redacted($0.0, $0.1)) },
                               content: Content(size: record.bytesOut, mimeType: mimeType), redirectURL: location,
                               bodySize: answered ? record.bytesOut : -1),
            timings: Timings(wait: ms), _seq: record.seq, _fault: record.fault, _op: record.op)
    }

    static func redacted(_ name: String, _ value: String) -> String {
        secretFields.contains(name.lowercased()) ? TargetRedaction.placeholder : value
    }

    /// The query's parameters, percent-decoded (`+` kept: it is a space
    /// only in forms), in order; of a target already redacted.
    static func queryString(_ target: String) -> [NameValue] {
        guard let question = target.firstIndex(of: "?") else { return [] }
        return target[target.index(after: question)...].split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ text: Substring) -> String {
                String(decoding: PercentDecoding.decode(text, keepingMalformed: true) ?? Array(text.utf8), as: UTF8.self)
            }
            return NameValue(name: decoded(parts[0]), value: parts.count > 1 ? decoded(parts[1]) : "")
        }
    }

}
