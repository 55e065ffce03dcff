import Foundation

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
