import Foundation
@testable import LarderPostgres
import LarderSupport
import LarderTestSupport
import Testing

/// `CoalescingRun`, with no database: the feed's reads and its
/// notifications to the other servers go through it. Requests during a run
/// share one more run; with a spacing, runs start at least that far apart
/// even when the job takes no time (a notification now only marks the next
/// read, so its job is instant), and a request after a longer pause starts
/// at once.
@Suite(.blockingLane) struct CoalescingRunTests {
    /// Start times of the job's runs, in monotonic nanoseconds.
    final class Starts: Sendable {
        let times = Locked<[Int64]>([])
        func record() { times.withLock { $0.append(Clock.monotonicNanos()) } }
        var count: Int { times.withLock { $0.count } }
    }

    func waitUntil(_ seconds: Double = 5, _ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() && Date() < deadline { try await Task.sleep(nanoseconds: 2_000_000) }
    }

    @Test func requestsDuringASpacingShareOneRunAndRunsKeepTheSpacing() async throws {
        let spacing = 0.1
        let run = CoalescingRun(spacing: spacing, on: .next())
        let starts = Starts()
        // 300 ms of requests every millisecond, to an instant job.
        let end = Date().addingTimeInterval(0.3)
        while Date() < end {
            run.request { starts.record() }
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        try await Task.sleep(nanoseconds: UInt64(spacing * 2e9))
        let times = starts.times.withLock { $0 }
        // 300 ms at 100 ms apart: at most 5 runs (at 0, 100, 200 and 300 ms,
        // and one for a request after that), however slow the machine (a
        // late sleep only makes fewer). Without the spacing, about 300.
        #expect((1...5).contains(times.count), "\(times.count) runs for 300 ms of requests 100 ms apart")
        // The spacing is kept between the runs' starts; the job records its
        // own a moment later, so allow that moment (5 ms; without the spacing
        // the runs come about 1 ms apart).
        for (earlier, later) in zip(times, times.dropFirst()) {
            #expect(later - earlier >= Int64(spacing * 1e9) - 5_000_000, "two runs \(Double(later - earlier) / 1e6) ms apart")
        }
    }

    @Test func aRequestAfterAPauseLongerThanTheSpacingRunsAtOnce() async throws {
        let run = CoalescingRun(spacing: 0.05, on: .next())
        let starts = Starts()
        run.request { starts.record() }
        try await waitUntil { starts.count == 1 }
        try await Task.sleep(nanoseconds: 200_000_000)
        let asked = Clock.monotonicNanos()
        run.request { starts.record() }
        try await waitUntil { starts.count == 2 }
        let started = starts.times.withLock { $0.last! }
        // At once: well under a second, where a spacing of 50 s would show.
        #expect(starts.count == 2)
        #expect(started - asked < 1_000_000_000)
    }

    @Test func aRequestSoonAfterARunWaitsForTheSpacing() async throws {
        let spacing = 0.3
        let run = CoalescingRun(spacing: spacing, on: .next())
        let starts = Starts()
        run.request { starts.record() }
        try await waitUntil { starts.count == 1 }
        // The job is done and nothing runs; a request now must still wait.
        run.request { starts.record() }
        try await waitUntil { starts.count == 2 }
        let times = starts.times.withLock { $0 }
        #expect(times.count == 2)
        #expect(times[1] - times[0] >= Int64(spacing * 1e9) - 5_000_000, "the second run started \(Double(times[1] - times[0]) / 1e6) ms after the first")
    }

    @Test func requestsDuringARunMakeExactlyOneMoreAndStopEndsThem() async throws {
        let run = CoalescingRun(on: .next())
        let starts = Starts()
        let release = Locked(false)
        let job: @Sendable () async -> Void = {
            starts.record()
            while !release.withLock({ $0 }) { try? await Task.sleep(nanoseconds: 2_000_000) }
        }
        run.request(job)
        try await waitUntil { starts.count == 1 }
        for _ in 0..<10 { run.request(job) }
        release.withLock { $0 = true }
        try await waitUntil { starts.count == 2 }
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(starts.count == 2, "ten requests during a run made \(starts.count - 1) more runs")

        // Stopped: a request during the run makes no more.
        release.withLock { $0 = false }
        run.request(job)
        try await waitUntil { starts.count == 3 }
        run.request(job)
        run.stop()
        release.withLock { $0 = true }
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(starts.count == 3, "a run followed stop()")
    }
}
