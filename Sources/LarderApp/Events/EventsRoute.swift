import LarderHTTP
import LarderRouting
import LarderSharing
import LarderSupport

/// `GET /events?prefix=`: the change feed as Server-Sent Events. The stream
/// costs one subscriber entry and a parked connection; a reader that falls
/// more than `maxBuffered` bytes behind gets a last `dropped` event and is
/// disconnected, so it never slows writers.
struct EventsRoute: Route {
    let hub: ChangeHub
    let maxBuffered: Int
    /// Shared by every stream of this server: one formatting per change.
    let formatter = SSEEventFormatter()

    static let dropped = Array("event: dropped\ndata: {\"reason\":\"the reader fell too far behind\"}\n\n".utf8)

    func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        if let answer = try ReadOnlyEndpoint.check(request, "the change feed is read with GET") { return answer }
        let query = try QueryParameters(request.head.query)
        let stream = HTTPPushStream(maxBuffered: maxBuffered, overflowTail: Self.dropped)
        // A comment first, so clients see the stream is live at once.
        stream.write(Array(": larder change feed\n\n".utf8))
        if request.method == .get {
            let subscriber = EventStreamSubscriber(stream: stream, formatter: formatter)
            let lastEventID = request.head.headers["Last-Event-ID"] ?? query["lastEventId"]
            if let id = hub.subscribe(subscriber, prefix: query["prefix"] ?? "", after: lastEventID) {
                stream.whenClosed { [weak hub] in hub?.unsubscribe(id) }
            }
        }
        return .respond(HTTPResponse(status: .ok, headers: [("Content-Type", "text/event-stream"),
                                                            ("Cache-Control", "no-store")],
                                     body: .push(stream)))
    }
}
