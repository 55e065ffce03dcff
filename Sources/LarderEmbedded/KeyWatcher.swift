import Dispatch
import Foundation
import LarderKit

/// One `watch(_:)` stream: told "the key changed" from under the store's
/// write barrier, it only schedules a read; the read (disk I/O) runs on its
/// own serial queue, so states are yielded in the order they were read and
/// the newest read is the last one yielded. Changes that arrive while a read
/// is still waiting to start fold into it (coalescing, as `watch` allows).
final class KeyWatcher: @unchecked Sendable {
    let key: String
    private let read: @Sendable () throws -> KeyState
    private let continuation: AsyncThrowingStream<KeyState, any Error>.Continuation
    /// Serial: one read at a time, in order. Targets the global pool, so an
    /// idle watcher costs no thread.
    private let queue = DispatchQueue(label: "larder.embedded.watch", target: .global())
    // Guarded by `lock`.
    private let lock = NSLock()
    /// A read is queued and has not started: a new change needs no other.
    private var pending = false
    private var finished = false

    init(key: String, continuation: AsyncThrowingStream<KeyState, any Error>.Continuation,
         read: @escaping @Sendable () throws -> KeyState) {
        self.key = key
        self.continuation = continuation
        self.read = read
    }

    /// The key (may have) changed: schedule a read unless one is already waiting.
    func changed() {
        let schedule = lock.withLock { () -> Bool in
            guard !pending, !finished else { return false }
            pending = true
            return true
        }
        if schedule { queue.async { self.deliver() } }
    }

    /// Ends the stream (the store closed, or reading failed).
    func finish(throwing error: (any Error)? = nil) {
        lock.withLock { finished = true }
        continuation.finish(throwing: error)
    }

    private func deliver() {
        // Cleared before reading: a change from now on schedules another read.
        guard lock.withLock({ pending = false; return !finished }) else { return }
        do {
            continuation.yield(try read())
        } catch {
            finish(throwing: error)
        }
    }
}
