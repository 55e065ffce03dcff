import Dispatch
import Foundation
import LarderWire

/// Runs `body` on its own thread; `wait` collects its result. For a
/// blocking request (a watch, a slow body) that a test answers from its
/// own thread meanwhile.
package final class Background<T>: @unchecked Sendable {
    private var result: Result<T, Error>?
    private let done = DispatchSemaphore(value: 0)

    package init(_ body: @escaping @Sendable () throws -> T) {
        Thread.detachNewThread { [self] in
            let r = Result { try body() }
            result = r
            done.signal()
        }
    }

    package func wait(_ seconds: Double = Poll.patience) throws -> T {
        guard done.wait(timeout: .now() + seconds) == .success else {
            throw ClientError("the background request did not finish within \(seconds) s")
        }
        return try result!.get()
    }
}
