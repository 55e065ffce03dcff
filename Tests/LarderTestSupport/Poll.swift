import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Waiting for something another process or thread will make true: the
/// one polling loop of the tests, in the three shapes they need.
package enum Poll {
    /// How long a test waits for what must happen before it calls it a
    /// failure: long, so that only a hang fails a test, never a slow or
    /// loaded machine. (A test asserts behaviour, never a wall-clock bound;
    /// how fast something happens is a figure for `Benchmarks/`.)
    package static let patience: Double = 60

    package struct TimedOut: Error, CustomStringConvertible {
        package let what: String
        package var description: String { "timed out waiting for \(what)" }
    }

    /// Polls `condition` every `interval` seconds until it holds: the
    /// seconds that took, or nil once `seconds` have passed without it.
    @discardableResult
    package static func elapsed(within seconds: Double, every interval: Double = 0.005,
                               _ condition: () throws -> Bool) rethrows -> Double? {
        let start = Date()
        while true {
            if try condition() { return Date().timeIntervalSince(start) }
            if Date().timeIntervalSince(start) > seconds { return nil }
            usleep(UInt32(interval * 1e6))
        }
    }

    /// Whether `condition` came to hold within `seconds` (polled every `interval`).
    package static func holds(within seconds: Double, every interval: Double = 0.005,
                             _ condition: () throws -> Bool) rethrows -> Bool {
        try elapsed(within: seconds, every: interval, condition) != nil
    }

    /// Polls `condition` every 20 ms until it holds; throws `TimedOut`
    /// (naming `what`) after `timeout` seconds.
    package static func until(_ timeout: Double = patience, _ what: String, _ condition: () throws -> Bool) throws {
        guard try holds(within: timeout, every: 0.02, condition) else { throw TimedOut(what: what) }
    }

    /// The same from async code: sleeps between polls instead of blocking
    /// one of Swift Testing's cooperative threads.
    package static func until(_ what: String, within seconds: Double = patience, every interval: Duration = .milliseconds(2),
                             _ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { throw TimedOut(what: what) }
            try await Task.sleep(for: interval)
        }
    }
}
