import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Waiting for something another process or thread will make true.
enum Poll {
    struct TimedOut: Error, CustomStringConvertible {
        let what: String
        var description: String { "timed out waiting for \(what)" }
    }

    /// Polls `condition` every 20 ms until it holds; throws `TimedOut`
    /// (naming `what`) after `timeout` seconds.
    static func until(_ timeout: Double = 30, _ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return }
            usleep(20_000)
        }
        throw TimedOut(what: what)
    }
}
