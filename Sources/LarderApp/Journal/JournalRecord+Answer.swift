import LarderHTTP
import LarderSupport

extension JournalRecord {
    /// The record of a request answered with `response`, now; its path
    /// inside the namespace starts `pathOffset` bytes into the target.
    init(_ request: HTTPAnsweredRequest, _ response: HTTPResponse, pathOffset: Int32) {
        var etag: String?, fault: String?
        for (name, value) in response.headers {
            // Larder's own answers spell both as here; lengths first, so
            // other headers cost one integer compare each.
            switch name.utf8.count {
            case 4 where name == "ETag": etag = value
            case 12 where name == "Larder-Fault": fault = value
            default: break
            }
        }
        var status = Int16(truncatingIfNeeded: response.status.code)
        var bytesOut: Int64 = request.method == .head ? 0 : response.body.knownLength
        switch response.networkFault {
        case .reset(let handled)?:
            bytesOut = 0
            if !handled { status = 0 }
        case .truncate(let n)?:
            bytesOut = min(bytesOut, n)
        case .pace?, nil:
            break
        }
        let duration = Int64(request.nanos)
        self.init(startedNanos: Clock.nowNanos() - duration, durationNanos: duration, method: request.method,
                  target: request.target, pathOffset: pathOffset, status: status, bytesIn: request.bodyBytes,
                  bytesOut: bytesOut, etag: etag, fault: fault, op: nil)
    }
}

extension HTTPResponseBody {
    /// The body's length when it is known before it is sent (0 for bodies
    /// whose end only the stream knows: a snapshot, an event stream).
    var knownLength: Int64 {
        switch self {
        case .empty: 0
        case .bytes(let b): Int64(b.count)
        case .stream(_, let length): length
        case .file(let f): Int64(f.prefix.count) + f.length
        case .unsizedStream, .push: 0
        }
    }
}
