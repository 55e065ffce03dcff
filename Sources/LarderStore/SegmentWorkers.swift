import Dispatch
import Foundation
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
    private let queue = DispatchQueue(label: "larder.store.segments", attributes: .concurrent)
    private let slots: Int
    // Guarded by `lock`.
    private var taken = 0
    private let lock = Lock()

    init(slots: Int) { self.slots = max(1, slots) }

    /// Starts `work` on a worker when a slot is free (the job then holds it
    /// until `finished(_:)`), else runs it here before returning. Either
    /// way the job is done once `work` has returned.
    func start(_ job: SegmentJob, _ work: @escaping @Sendable (SegmentJob) -> Void) {
        let free = lock.withLock { () -> Bool in
            guard taken < slots else { return false }
            taken += 1
            return true
        }
        job.holdsSlot = free
        if free {
            queue.async { work(job); job.signalDone() }
        } else {
            work(job)
            job.signalDone()
        }
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
