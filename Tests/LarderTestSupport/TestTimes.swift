import Foundation
import LarderSupport
import Testing

/// Where a full run's time goes: with `LARDER_TEST_TIMES=<file>` set, each
/// lane appends one line per test case, `<lane>\t<seconds>\t<own CPU>\t<children's
/// CPU>\t<start>\t<test id>`: the time its body ran (a blocking body's wait for a turn not
/// included), and the CPU (user + system) this process and its finished
/// children spent meanwhile, which is the test's own only when it ran alone
/// (`LARDER_TEST_BLOCKING_WIDTH=1`, one lane at a time).
/// Reported by `Benchmarks/test-times.py`; off (one environment read) when
/// the variable is unset.
enum TestTimes {
    private static let file: FileHandle? = ProcessInfo.processInfo.environment["LARDER_TEST_TIMES"].flatMap { path in
        // No file, no times: FileHandle answers nil below.
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        return FileHandle(forWritingAtPath: path)
    }
    private static let lock = Lock()
    /// When the first line was asked for (a static is set on first use):
    /// the zero of the start times and notes.
    private static let runStart = ContinuousClock.now

    /// Records an event of the run (a lent turn) at its time, when times are asked for.
    static func note(_ what: String) {
        guard let file else { return }
        let line = "note\t\(Int(seconds(ContinuousClock.now - runStart)))\t\(what)\n"
        lock.withLock { file.write(Data(line.utf8)) }
    }

    /// Runs `body`, and records how long it took when times are asked for.
    static func measure(_ lane: String, _ test: Test,
                        _ body: () async throws -> Void) async throws {
        guard let file else { return try await body() }
        _ = runStart
        let start = ContinuousClock.now
        let cpuBefore = (cpuSeconds(RUSAGE_SELF), cpuSeconds(RUSAGE_CHILDREN))
        defer {
            let took = seconds(ContinuousClock.now - start)
            let ownCPU = cpuSeconds(RUSAGE_SELF) - cpuBefore.0, childCPU = cpuSeconds(RUSAGE_CHILDREN) - cpuBefore.1
            let offset = seconds(start - runStart)
            let line = "\(lane)\t\(String(format: "%.3f\t%.3f\t%.3f\t%.1f", took, ownCPU, childCPU, offset))\t\(test.id)\n"
            lock.withLock { file.write(Data(line.utf8)) }
        }
        try await body()
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private static func cpuSeconds(_ who: __rusage_who) -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(who.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
