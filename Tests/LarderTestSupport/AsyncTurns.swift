import Dispatch
import Foundation
import LarderSupport

/// A counting semaphore for async code that widens while the CPU stands idle.
///
/// `acquire` suspends (holding no thread) while `limit` turns are taken, and
/// a `release` hands its turn to the longest waiter, one that asked to go
/// `first` before any other (a long body started last would end the run
/// late). `limit` starts at `width` and moves between `width` and
/// `width + extra` by what the machine's CPU did over the last window
/// (`window`): one turn wider after
/// a window with a third of a core or more idle (`idleEnough`) while someone
/// waits, one narrower after a window with less than a tenth of a core idle
/// (`busy`); a release while more turns are taken than the limit retires
/// its turn instead of handing it on. A body that sleeps through a fault's
/// delay or waits for a watch's deadline or a browser holds a turn but no
/// CPU, and with the width alone a full run spent a third of its time with
/// a core idle. A machine kept busy by anything (other tests, a build,
/// `yes > /dev/null`) never widens it: there, exactly `width` bodies run
/// (CI's image build, in an idle-class cgroup, aside: `MachineCPU`).
///
/// (`Locked`, not `Mutex`: ThreadSanitizer cannot see the standard
/// library's futex waits and reports a race under `Mutex`.)
final class AsyncTurns: Sendable {
    fileprivate struct State {
        var taken = 0
        var limit: Int
        var waiters: [(first: Bool, continuation: CheckedContinuation<Void, Never>)] = []
        /// The machine's CPU counters at the start of the current window.
        var windowStart: MachineCPU.Sample?
    }

    let width: Int
    let extra: Int
    private let state: Locked<State>
    /// Samples the machine's CPU every `window`, on its own queue (never a
    /// test's). Set once in `init` and cancelled in `deinit`; never touched between.
    nonisolated(unsafe) private let sampler: DispatchSourceTimer?
    static let window = 1.0
    /// Idle CPU, in cores, over a window: enough to widen, and so little it narrows.
    static let idleEnough = 0.3, busy = 0.1

    init(width: Int, extra: Int) {
        self.width = max(1, width)
        self.extra = max(0, extra)
        state = Locked(State(limit: self.width))
        guard extra > 0, MachineCPU.sample() != nil else {
            sampler = nil
            return
        }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "larder.tests.turns-sampler"))
        sampler = timer
        timer.schedule(deadline: .now() + Self.window, repeating: Self.window)
        timer.setEventHandler { [weak self] in self?.followTheIdleCPU() }
        timer.resume()
    }

    deinit { sampler?.cancel() }

    func acquire(first: Bool = false) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                guard state.taken < state.limit else {
                    state.waiters.append((first, continuation))
                    return false
                }
                state.taken += 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.taken <= state.limit, !state.waiters.isEmpty else {
                state.taken -= 1
                return nil
            }
            return state.nextWaiter()
        }
        next?.resume()
    }

    /// Every `window`: the limit follows the idle CPU (see the type), and a
    /// wider limit lets a waiter in.
    private func followTheIdleCPU() {
        guard let now = MachineCPU.sample() else { return }
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.windowStart = now }
            guard let start = state.windowStart else { return nil }
            let idle = now.idleCores(since: start)
            if idle < Self.busy, state.limit > width {
                state.limit -= 1
                TestTimes.note("narrowed to \(state.limit): \(String(format: "%.2f", idle)) cores idle")
            } else if idle >= Self.idleEnough, !state.waiters.isEmpty, state.limit < width + extra {
                state.limit += 1
                TestTimes.note("widened to \(state.limit): \(String(format: "%.2f", idle)) cores idle")
            }
            guard state.taken < state.limit, !state.waiters.isEmpty else { return nil }
            state.taken += 1
            return state.nextWaiter()
        }
        next?.resume()
    }
}

extension AsyncTurns.State {
    /// The longest waiter that asked to go first, else the longest waiter.
    mutating func nextWaiter() -> CheckedContinuation<Void, Never> {
        waiters.remove(at: waiters.firstIndex { $0.first } ?? 0).continuation
    }
}

/// The machine's idle CPU time from `/proc/stat`'s first line (in clock ticks).
enum MachineCPU {
    struct Sample {
        let idle: Double
        let uptime: Double

        /// How many cores' worth stood idle between `earlier` and this sample
        /// (waiting for the disk counts as busy: it is a disk to share).
        func idleCores(since earlier: Sample) -> Double {
            let elapsed = uptime - earlier.uptime
            guard elapsed > 0 else { return 0 }
            let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
            return (idle - earlier.idle) / ticks / elapsed
        }
    }

    static func sample() -> Sample? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard fields.count >= 4 else { return nil }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Sample(idle: fields[3] + backgroundTicks(),
                      uptime: Double(now.tv_sec) + Double(now.tv_nsec) / 1e9)
    }

    /// The CPU (in clock ticks) taken so far by the idle-class cgroup that
    /// `.ci/containers-prepare` builds the image in (`larder-background`,
    /// `cpu.idle` 1): it runs only on CPU nothing else wants and yields it at
    /// once, so for the tests it is idle CPU. Without this, CI's image build
    /// beside `swift test` read as a busy machine and the turns never
    /// widened (a run of 275 s that takes 200–210 s here alone). 0 where
    /// there is no such group.
    static func backgroundTicks() -> Double {
        guard let text = try? String(contentsOfFile: "/sys/fs/cgroup/cpuacct/larder-background/cpuacct.usage", encoding: .utf8),
              let nanoseconds = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return 0 }
        return nanoseconds / 1e9 * Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
