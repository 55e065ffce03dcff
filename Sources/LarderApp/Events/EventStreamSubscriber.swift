import LarderHTTP
import LarderRouting
import LarderModel
import LarderSharing
import LarderSupport

/// One `/events` stream as a change-hub subscriber: each change as a
/// Server-Sent Event, written to the connection's push stream, which
/// bounds what it holds (a reader too far behind gets a `dropped` event and
/// is disconnected: `HTTPPushStream.overflowTail`).
final class EventStreamSubscriber: ChangeSubscriber {
    let stream: HTTPPushStream
    private let formatter: SSEEventFormatter

    init(stream: HTTPPushStream, formatter: SSEEventFormatter) {
        self.stream = stream
        self.formatter = formatter
    }

    /// Queued: formatting and writing run on the hub's delivery queue, off
    /// the store's write barrier.
    var receivesInline: Bool { false }

    func receive(_ event: ChangeHub.Event) -> Bool { stream.write(formatter.format(event)) }

    /// A closed hub (its namespace dropped, or the server stopping) ends
    /// the stream's body, so the reader sees the end rather than a silence;
    /// a stream that fell behind has closed itself.
    func end(_ reason: ChangeSubscriberEnd) {
        if case .closed = reason { stream.finish() }
    }

    func receiveReset(id: String) -> Bool { stream.write(Array("id: \(id)\nevent: reset\ndata: {}\n\n".utf8)) }

    func keepAlive() { stream.write(Self.keepAliveComment) }

    static let keepAliveComment = Array(": keep-alive\n\n".utf8)
}

/// Formats each change once for all the streams it goes to: the hub gives
/// one change to every queued subscriber before the next, so the last one
/// formatted is the one the next stream asks for.
final class SSEEventFormatter: Sendable {
    private let last = Locked<(sequence: UInt64, text: [UInt8])?>(nil)

    func format(_ event: ChangeHub.Event) -> [UInt8] {
        if let hit = last.withLock({ $0 }), hit.sequence == event.sequence { return hit.text }
        let text = Self.format(event)
        last.withLock { $0 = (event.sequence, text) }
        return text
    }

    /// One SSE event: `id`, `event` and a one-line JSON `data`.
    static func format(_ event: ChangeHub.Event) -> [UInt8] {
        let c = event.change
        return Array("id: \(event.id)\nevent: \(c.kind.rawValue)\ndata: ".utf8) + ModelJSON.encode(c.data) + Array("\n\n".utf8)
    }
}
