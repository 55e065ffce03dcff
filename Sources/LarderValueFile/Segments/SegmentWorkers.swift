import Dispatch
import FoundationEssentials
import LarderSupport

/// Runs segment jobs of large values (deflate on upload, inflate on
/// download) on the machine's cores.
///
/// Memory stays bounded across the whole process: a job handed to a worker
/// holds one of `slots` until its owner has taken the result, and a stream
/// that finds no free slot does the job itself, on its own thread, as a
/// single-stream write or read always did. So however many large values
/// move at once, at most `slots` extra segments are buffered, and no stream
/// ever waits for another one's slot.
final class SegmentWorkers: @unchecked Sendable {
    static let shared = SegmentWorkers(slots: 2 * ProcessInfo.processInfo.activeProcessorCount)

    /// Jobs a single stream keeps on workers at once: enough to keep every
    /// core busy while the stream's own thread reads or sends.
    let depthPerStream = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// One serial queue per core, used in turn. Serial queues run on
    /// Dispatch's overcommit threads: a concurrent queue would share the
    /// default pool, which on Linux has one thread per core and counts a
    /// connection thread waiting for its segment as busy, so one job ran
    /// at a time (measured: 1.2 cores busy during a 256 MiB PUT).
    private let queues: [DispatchQueue]
    private let slots: Int
    // Guarded by `lock`.
    private var taken = 0
    private var nextQueue = 0
    private let lock = Lock()

    init(slots: Int) {
        self.slots = max(1, slots)
        queues = (0..<max(1, ProcessInfo.processInfo.activeProcessorCount)).map {
            DispatchQueue(label: "larder.store.segments.\($0)")
        }
    }

    /// Starts `work` on a worker when a slot is free (the job then holds it
    /// until `finished(_:)`), else runs it here before returning. Either
    /// way the job is done once `work` has returned.
    ///
    /// With `inlineAllowed` false, a job that finds no free slot is not run
    /// at all and `start` returns false: a reader prefetching ahead does not
    /// buffer segments past its own when the process is at its limit.
    @discardableResult
    func start(_ job: SegmentJob, inlineAllowed: Bool = true, _ work: @escaping @Sendable (SegmentJob) -> Void) -> Bool {
        let queue = lock.withLock { () -> DispatchQueue? in
            guard taken < slots else { return nil }
            taken += 1
            nextQueue = (nextQueue + 1) % queues.count
            return queues[nextQueue]
        }
        job.holdsSlot = queue != nil
        if let queue {
            queue.async { work(job); job.signalDone() }
        } else if inlineAllowed {
            work(job)
            job.signalDone()
        } else {
            return false
        }
        return true
    }

    /// Waits for `job`'s work and gives back its slot: the owner has the result.
    func finished(_ job: SegmentJob) {
        job.waitUntilDone()
        if job.holdsSlot {
            job.holdsSlot = false
            lock.withLock { taken -= 1 }
        }
    }
}
