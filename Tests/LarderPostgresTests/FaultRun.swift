import Foundation
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// How long the fault tests' recorded histories run: short in CI, as long
/// as `LARDER_FAULT_SECONDS` says in the long runs (Tests/cluster/long-faults.sh).
enum FaultRun {
    static func seconds(default short: Double) -> Double {
        ProcessInfo.processInfo.environment["LARDER_FAULT_SECONDS"].flatMap(Double.init).map { max($0, short) } ?? short
    }

    /// The checker's allowance: a longer history has more calls of unknown
    /// outcome to place.
    static func checkTimeout(_ seconds: Double) -> Double { max(120, seconds * 10) }
}

/// Faults injected while a history is recorded, on a thread of their own:
/// they begin once the recorder says its clients run (`--started-file`,
/// which a loaded machine may take seconds to reach) and keep their
/// timing however busy the test's task pool is.
final class FaultSchedule: Sendable {
    private let failure = Locked<String?>(nil)
    private let done = Locked(false)

    /// Waits (up to 120 s) for `startedFile` to exist, then `delay`
    /// seconds, then runs `faults`.
    init(startedFile: String, delay: Double, _ faults: @escaping @Sendable () throws -> Void) {
        let (failure, done) = (failure, done)
        Thread {
            defer { done.withLock { $0 = true } }
            let deadline = Date().addingTimeInterval(120)
            while !FileManager.default.fileExists(atPath: startedFile) {
                guard Date() < deadline else { return failure.withLock { $0 = "the recorder did not start within 120 s" } }
                usleep(20_000)
            }
            usleep(UInt32(delay * 1_000_000))
            do { try faults() } catch { failure.withLock { $0 = "\(error)" } }
        }.start()
    }

    /// Returns once the faults ran; what went wrong, if anything.
    func finished() async -> String? {
        while !done.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(50)) }
        return failure.withLock { $0 }
    }
}
