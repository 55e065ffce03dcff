import Foundation
import LarderSupport
import LarderKit

// Helpers of the Larder conformance suites: naming a thrown `LarderError`,
// recording an async stream to wait on, and byte order of keys.

extension LarderError {
    /// The case's name, so a test can say which error it expects in one
    /// comparison (the cases carry keys and messages a test does not pin).
    var caseName: String {
        switch self {
        case .notFound: "notFound"
        case .preconditionFailed: "preconditionFailed"
        case .invalidKey: "invalidKey"
        case .notJSON: "notJSON"
        case .cannotWrite: "cannotWrite"
        case .cannotDecode: "cannotDecode"
        case .cannotEncode: "cannotEncode"
        case .directoryLocked: "directoryLocked"
        case .unreachable: "unreachable"
        case .connectionLost: "connectionLost"
        case .server: "server"
        }
    }
}

/// The `LarderError` case `body` threw ("notFound"), "no error", or a
/// description of any other error: `#expect(await thrownCase {…} == "notFound")`.
func thrownCase(_ body: () async throws -> Void) async -> String {
    do {
        try await body()
        return "no error"
    } catch let error as LarderError {
        return error.caseName
    } catch {
        return "\(type(of: error)): \(error)"
    }
}

/// Collects what an async stream yields on a task of its own, so a test can
/// wait (with a generous deadline) for an element without blocking on
/// `next()` forever when the element never comes.
final class StreamRecorder<Element: Sendable>: Sendable {
    /// A class around the lock, so the reading task can hold it too.
    private final class State: Sendable {
        let lock = Locked<(elements: [Element], ended: String?)>(([], nil))
    }
    private let state = State()
    private let task: Task<Void, Never>

    init(_ stream: AsyncThrowingStream<Element, any Error>) {
        let state = self.state
        task = Task {
            do {
                for try await element in stream { state.lock.withLock { $0.elements.append(element) } }
                state.lock.withLock { $0.ended = "finished" }
            } catch {
                state.lock.withLock { $0.ended = "threw \(error)" }
            }
        }
    }

    var elements: [Element] { state.lock.withLock { $0.elements } }

    /// Waits until `done` holds for what arrived so far; returns it. Throws
    /// when `seconds` pass first or the stream ends without it.
    @discardableResult
    func wait(within seconds: Double = 60, for what: String, until done: ([Element]) -> Bool) async throws -> [Element] {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let (elements, ended) = state.lock.withLock { ($0.elements, $0.ended) }
            if done(elements) { return elements }
            if let ended { throw KitFailure("the stream \(ended) before \(what); got \(elements)") }
            if Date() > deadline { throw KitFailure("no \(what) within \(seconds) s; got \(elements)") }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
    }

    /// Stops iterating (the stream's producer sees the termination).
    func stop() { task.cancel() }

    deinit { task.cancel() }
}

/// A step around the behaviour under test did not happen.
struct KitFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Whether `keys` are in strictly increasing UTF-8 byte order (the store's
/// order; Swift's `<` on String is not).
func inByteOrder(_ keys: [String]) -> Bool {
    zip(keys, keys.dropFirst()).allSatisfy { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
}
