import LarderHTTP
import LarderRouting
import LarderSupport

extension JournalRecord {
    /// Bytes of a request target an entry keeps at most.
    static let maxTarget = 1024

    /// The record of a request answered with `response` at `nowNanos` (by
    /// its namespace's clock); its path inside the namespace starts
    /// `pathOffset` bytes into the target.
    init(_ request: borrowing HTTPAnsweredRequest, _ response: borrowing HTTPResponse, pathOffset: Int32, nowNanos: Int64) {
        var (etag, fault) = response.headers.withUnsafeBufferPointer(Self.etagAndFault)
        // A block's fields are formatted once and never a fault's.
        if let tag = response.headerBlock?.etag { etag = tag }
        var status = Int16(truncatingIfNeeded: response.status.code)
        var bytesOut = request.responseBodyBytes
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
        // A target is kept whole up to `maxTarget` bytes (the request line
        // may be 8 KiB): an entry's memory stays bounded.
        let target = request.target.utf8.count <= Self.maxTarget
            ? request.target : String(decoding: request.target.utf8.prefix(Self.maxTarget), as: UTF8.self)
        self.init(startedNanos: nowNanos - duration, durationNanos: duration, method: request.method,
                  target: target, sentTarget: nil, version: request.version, head: request.head,
                  pathOffset: pathOffset, status: status,
                  responseHeaders: response.headers, responseBlock: response.headerBlock, bytesIn: request.bodyBytes,
                  bytesOut: bytesOut, etag: etag, fault: fault, op: nil)
    }

    /// The ETag and Larder-Fault fields among `headers`. Larder's own
    /// answers spell both as here; lengths first, so other fields cost one
    /// integer compare each. (A function of its own: a closure capturing
    /// the two variables cost an exclusivity check per access.)
    private static func etagAndFault(_ headers: UnsafeBufferPointer<(String, String)>) -> (String?, String?) {
        var etag: String?, fault: String?
        for i in headers.indices {
            switch headers[i].0.utf8.count {
            case 4 where headers[i].0 == "ETag": etag = headers[i].1
            case 12 where headers[i].0 == "Larder-Fault": fault = headers[i].1
            default: break
            }
        }
        return (etag, fault)
    }
}
