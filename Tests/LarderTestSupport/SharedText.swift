import Foundation
import LarderSupport

/// Text appended from one thread and read from another.
package final class SharedText: Sendable {
    private let text = Locked<String>("")
    private let done = Locked(false)
    package init() {}
    package func withLock<T>(_ body: (inout String) -> T) -> T { text.withLock { body(&$0) } }
    /// The writer closed its end: nothing more will come.
    package func end() { done.withLock { $0 = true } }
    package var ended: Bool { done.withLock { $0 } }

    /// Appends what `handle` (a pipe's reading end) gives, as it comes,
    /// until its writer closes it.
    package func collect(_ handle: FileHandle) {
        handle.readabilityHandler = { [self] handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil; end(); return }
            withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
    }
}
