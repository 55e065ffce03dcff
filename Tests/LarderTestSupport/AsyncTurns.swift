import Dispatch
import Foundation
import LarderSupport

/// A counting semaphore for async code that also lends turns to idle CPU.
///
/// `acquire` suspends (holding no thread) while `width` turns are taken, and
/// a `release` hands its turn to the longest waiter. Beyond `width`, up to
/// `extra` more turns are lent, one at a time, while the machine has stood
/// idle: a body that sleeps through a fault's delay or waits for a watch's
/// deadline holds a turn but no CPU, and a full run spent a third of its
/// time with a core idle. A lent turn is given only after a whole window
/// (`window`) in which more than one core's worth of CPU was idle, and the
/// next only after another such window, so a machine kept busy by anything
/// (other tests, a build, `yes > /dev/null`) never gets one and runs exactly
/// `width` bodies. Turns are alike: a release while lent turns are out
/// retires one instead of handing it on.
///
/// (`Locked`, not `Mutex`: ThreadSanitizer cannot see the standard
/// library's futex waits and reports a race under `Mutex`.)
final class AsyncTurns: Sendable {
    private struct State {
        var taken = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// The machine's CPU counters at the start of the current window.
        var windowStart: MachineCPU.Sample?
    }

    let width: Int
    let extra: Int
    private let state = Locked(State())
    /// Samples the machine's CPU while anyone waits (its own queue: never blocks a test).
    /// (Set once in `init` and cancelled in `deinit`; never touched between.)
    nonisolated(unsafe) private let sampler: DispatchSourceTimer?
    static let window = 1.0
    /// Idle CPU, in cores, over a whole window that lends a turn: half a core.
    static let idleEnough = 0.5

    init(width: Int, extra: Int) {
        self.width = max(1, width)
        self.extra = max(0, extra)
        guard extra > 0, MachineCPU.sample() != nil else {
            sampler = nil
            return
        }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "larder.tests.turns-sampler"))
        sampler = timer
        timer.schedule(deadline: .now() + Self.window, repeating: Self.window)
        timer.setEventHandler { [weak self] in self?.lendIfIdle() }
        timer.resume()
    }

    deinit { sampler?.cancel() }

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                guard state.taken < width else {
                    state.waiters.append(continuation)
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
            guard state.taken <= width, !state.waiters.isEmpty else {
                state.taken -= 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }

    /// Every `window`: when someone waits, lent turns are left and the last
    /// window had more than one core idle, one waiter gets a lent turn.
    private func lendIfIdle() {
        guard let now = MachineCPU.sample() else { return }
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.windowStart = now }
            guard !state.waiters.isEmpty, state.taken < width + extra,
                  let start = state.windowStart, now.idleCores(since: start) > Self.idleEnough else { return nil }
            state.taken += 1
            TestTimes.note("lent a turn: \(state.taken) taken, \(String(format: "%.2f", now.idleCores(since: start))) cores idle")
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}

/// The machine's CPU time from `/proc/stat`'s first line: all of it and the idle part.
enum MachineCPU {
    struct Sample {
        let total: Double
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
        return Sample(total: fields.reduce(0, +), idle: fields[3],
                      uptime: Double(now.tv_sec) + Double(now.tv_nsec) / 1e9)
    }
}
