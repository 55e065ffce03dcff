import Foundation

/// The reading side of one `GET /events` connection, whichever transport
/// carries it: the answer's status, its body through an `SSEParser`, each
/// change event handed on at once, and how the connection ended.
///
/// `@unchecked Sendable`: `opened` and `received` are called by one reader
/// at a time (URLSession's serial delegate queue, or the wire connection's
/// queue under its lock), which orders them; `lastID` is guarded by `lock`.
final class EventStream: @unchecked Sendable {
    /// How a connection ended.
    enum Outcome: Sendable {
        /// The server answered 200 and later closed the stream (or it broke).
        case dropped
        /// The server could not be reached (nothing was answered).
        case unreachable(LarderError)
        /// The server answered with an error: reconnecting will not help.
        case refused(LarderError)
        /// The consuming task was cancelled.
        case cancelled
    }

    private let onOpen: @Sendable () -> Void
    private let onEvent: @Sendable (ChangeEvent) -> Void
    // The reader's state.
    private var parser = SSEParser()
    private var status: Int?
    private var errorBody = Data()
    // Guarded by `lock`.
    private let lock = NSLock()
    private var lastID: String?

    /// `onOpen` runs when the server answers 200 (it subscribes before it
    /// answers), `onEvent` for each change; both on the reader's queue.
    init(lastEventID: String?, onOpen: @escaping @Sendable () -> Void, onEvent: @escaping @Sendable (ChangeEvent) -> Void) {
        self.lastID = lastEventID
        self.onOpen = onOpen
        self.onEvent = onEvent
    }

    /// The id of the last event delivered (or the one connected with).
    var lastEventID: String? { lock.withLock { lastID } }

    /// The answer's status arrived.
    func opened(status: Int) {
        self.status = status
        if status == 200 { onOpen() }
    }

    /// The next bytes of the answer's body.
    func received<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        guard status == 200 else {
            errorBody.append(contentsOf: bytes)
            return
        }
        for message in parser.feed(bytes) {
            // `dropped` (the server gave up on a slow reader) and unknown
            // kinds are not changes; the reconnect resumes from the last id.
            guard let kind = ChangeEvent.Kind(rawValue: message.event),
                  let change = try? ModelJSON.decode(ChangeData.self, from: Data(message.data.utf8)) else { continue }
            let id = message.id ?? ""
            lock.withLock { lastID = id }
            onEvent(ChangeEvent(id: id, kind: kind, data: change))
        }
    }

    /// How the connection ended, from what was read and the transport's
    /// `failure` (nil when it ended cleanly).
    func outcome(cancelled: Bool, failure: LarderError?) -> Outcome {
        if cancelled { return .cancelled }
        if let status, status != 200 { return .refused(ErrorMapping.error(status: status, body: errorBody, key: "")) }
        if status == nil, let failure { return .unreachable(failure) }
        return .dropped
    }
}
