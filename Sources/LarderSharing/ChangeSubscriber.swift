/// Someone the change hub tells about changes under a prefix: an `/events`
/// stream, an embedded `changes(prefix:after:)` feed. Each keeps a bounded
/// buffer of its own: it takes an event or says it cannot, and then the
/// hub forgets it and ends it, so an unread subscriber never grows memory
/// or slows writers.
public protocol ChangeSubscriber: AnyObject, Sendable {
    /// Where `receive` runs for live changes. True: under the hub's lock,
    /// from under the store's write barrier, so a change is in the buffer
    /// when the write returns; `receive` must then be cheap and never block
    /// (a yield into a bounded buffer). False: on the hub's delivery queue,
    /// one change after another (for work such as formatting). Read once,
    /// when subscribing.
    var receivesInline: Bool { get }
    /// Takes one change, in the ring's order; false when the buffer is full
    /// (the reader fell behind): the hub then forgets it and calls `end`.
    /// Replayed changes are given under the hub's lock, whichever the mode.
    func receive(_ event: ChangeHub.Event) -> Bool
    /// The hub let go of the subscriber: it fell behind, or the hub closed.
    /// Called once, outside the hub's lock.
    func end(_ reason: ChangeSubscriberEnd)
    /// Takes a `reset` (`ChangeEvent.Kind.reset`) in place of a replay the
    /// history cannot give, under the hub's lock; `id` is the one to resume
    /// after from then on. False when the buffer is full, as `receive`.
    func receiveReset(id: String) -> Bool
    /// Called every keep-alive interval, if the hub has one (the server's
    /// SSE comment that keeps proxies from timing an idle stream out).
    func keepAlive()
}

extension ChangeSubscriber {
    public func keepAlive() {}
}

/// Why the hub let go of a subscriber.
public enum ChangeSubscriberEnd: Error, Sendable {
    /// Its buffer was full: its reader did not keep up.
    case fellBehind
    /// The hub closed (the store is closing).
    case closed
}
