import LarderHTTP
import LarderSupport

/// Records every answered request into its namespace's journal (outermost
/// on the server's chain, so answers given by middleware count too: a
/// CORS preflight, a 401, a fault). A request under `/ns/<name>/` goes to
/// that namespace's journal with its path inside it; its world, looked up
/// here, rides on the request so the route table does not look it up
/// again. Requests to `/journal`, `/healthz`, `/metrics` and the viewer's
/// files are not recorded.
///
/// The record is made when the answer passes back through (before it is
/// sent: a client that has its answer finds its request in the journal),
/// from what the answer carries: its status, `ETag`, `Larder-Fault` and
/// network fault, and its body's length. No body is kept.
///
/// A reset of the namespace (`DELETE /store/`, answered 2xx) empties its
/// journal instead of being recorded, so a test that resets first sees
/// only its own requests.
struct JournalMiddleware: LarderMiddleware {
    /// The default namespace's journal.
    let journal: RequestJournal
    let namespaces: Namespaces?

    func handle(_ request: RouteRequest, next: (RouteRequest) -> HTTPBodyAction) -> HTTPBodyAction {
        var request = request
        let head = request.head
        let path = head.path
        let journal: RequestJournal?
        let lateNamespace: String?
        var innerStart = 0
        if let (name, prefixBytes) = NamespacePath.split(path) {
            innerStart = prefixBytes
            if let world = namespaces?.existing(name) {
                request.namespace = (world, prefixBytes)
                journal = world.journal
                lateNamespace = nil
            } else {
                // Made by this request (or refused): its journal, if it
                // has one by then, is found when the answer comes.
                journal = nil
                lateNamespace = name
            }
        } else {
            journal = self.journal
            lateNamespace = nil
        }
        let inner = path.utf8.dropFirst(innerStart)
        guard Self.isRecorded(inner) else { return next(request) }
        let pathOffset = Int32(head.target.utf8.distance(from: head.target.startIndex, to: path.startIndex) + innerStart)
        let resets = head.method == .delete && inner.elementsEqual("/store/".utf8)
        let started = Clock.nowNanos()
        let counter = head.isChunked ? BodyByteCounter() : nil
        let namespaces = self.namespaces
        request.responder = request.responder.intercept { response, next in
            let target = journal ?? lateNamespace.flatMap { namespaces?.existing($0)?.journal }
            if let target {
                if resets && (200..<300).contains(response.status.code) {
                    target.clear()
                } else {
                    target.record(JournalRecord(head, pathOffset: pathOffset, startedNanos: started,
                                                bytesIn: counter?.count ?? head.contentLength ?? 0, response: response))
                }
            }
            next.respond(response)
        }
        let action = next(request)
        if let counter, case .receive(let sink) = action { return .receive(counter.counting(sink)) }
        return action
    }

    /// Whether requests to this path (inside its namespace) are recorded:
    /// not the journal's own, nor health checks, scrapes and the viewer's files.
    static func isRecorded(_ path: Substring.UTF8View) -> Bool {
        // Store requests, the common case, are decided by their second byte.
        var bytes = path.makeIterator()
        guard bytes.next() == UInt8(ascii: "/") else { return true }
        switch bytes.next() {
        case UInt8(ascii: "s")?: return true
        case nil: return false                                    // `/`: the viewer
        case UInt8(ascii: "j")?: return !path.elementsEqual("/journal".utf8)
        case UInt8(ascii: "h")?: return !path.elementsEqual("/healthz".utf8)
        case UInt8(ascii: "m")?: return !path.elementsEqual("/metrics".utf8)
        case UInt8(ascii: "v")?: return !(path.elementsEqual("/viewer".utf8) || path.starts(with: "/viewer/".utf8))
        default: return true
        }
    }
}

extension JournalRecord {
    /// The record of `head` answered with `response`, now.
    init(_ head: HTTPRequestHead, pathOffset: Int32, startedNanos: Int64, bytesIn: Int64, response: HTTPResponse) {
        var etag: String?, fault: String?
        for (name, value) in response.headers {
            if name == "ETag" { etag = value } else if name == "Larder-Fault" { fault = value }
        }
        var status = Int16(truncatingIfNeeded: response.status.code)
        var bytesOut: Int64 = head.method == .head ? 0 : response.body.knownLength
        switch response.networkFault {
        case .reset(let handled)?:
            bytesOut = 0
            if !handled { status = 0 }
        case .truncate(let n)?:
            bytesOut = min(bytesOut, n)
        case .pace?, nil:
            break
        }
        self.init(startedNanos: startedNanos, durationNanos: max(0, Clock.nowNanos() - startedNanos), method: head.method,
                  target: head.target, pathOffset: pathOffset, status: status, bytesIn: bytesIn, bytesOut: bytesOut,
                  etag: etag, fault: fault, op: nil)
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
