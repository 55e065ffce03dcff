import Foundation
import LarderKit
import LarderSharing

/// One `changes(prefix:after:)` stream as a change-hub subscriber: each
/// change yielded into the stream's bounded buffer, under the hub's lock,
/// so a change is in the feed when the write that made it returns.
final class ChangeFeed: ChangeSubscriber, @unchecked Sendable {
    let continuation: AsyncThrowingStream<ChangeEvent, any Error>.Continuation
    // Guarded by `lock`.
    private let lock = NSLock()
    /// The id of the last event the buffer took, named in the error that
    /// ends a feed that fell behind (its reader resumes after it).
    private var lastID: String?

    /// `continuation` must buffer a bounded number of events; `after`: the
    /// event id the feed resumes after, if any.
    init(_ continuation: AsyncThrowingStream<ChangeEvent, any Error>.Continuation, after: String?) {
        self.continuation = continuation
        self.lastID = after
    }

    var receivesInline: Bool { true }

    func receive(_ event: ChangeHub.Event) -> Bool {
        if case .dropped = continuation.yield(event.change.event) { return false }
        lock.withLock { lastID = event.id }
        return true
    }

    func receiveReset(id: String) -> Bool {
        if case .dropped = continuation.yield(ChangeEvent(id: id, kind: .reset, data: ChangeData())) { return false }
        lock.withLock { lastID = id }
        return true
    }

    func end(_ reason: ChangeSubscriberEnd) {
        switch reason {
        case .closed: continuation.finish()
        case .fellBehind: continuation.finish(throwing: Self.fellBehind(lastID: lock.withLock { lastID }))
        }
    }

    /// The error ending a feed whose buffer filled up: the server's 503
    /// `busy`, naming the id to resume after (the server drops a slow SSE
    /// reader the same way; an unread feed must not grow forever).
    static func fellBehind(lastID: String?) -> LarderError {
        LarderError.server(status: 503, error: ErrorBody(
            .busy, "the change feed fell behind; resume with after: \(lastID ?? "")"))
    }
}
