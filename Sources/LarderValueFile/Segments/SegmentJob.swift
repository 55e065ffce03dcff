import Dispatch

/// One segment's buffers and result, handed to a worker and back. The
/// owner fills `input`, starts the job, and reads `output`, `produced`,
/// `crc` and `error` only after `SegmentWorkers.finished` (the semaphore
/// orders the worker's writes before the owner's reads); between those
/// calls only the worker touches it.
final class SegmentJob: @unchecked Sendable {
    var input: UnsafeMutableRawBufferPointer
    var inputCount = 0
    var output: UnsafeMutableRawBufferPointer
    var produced = 0
    /// CRC-32 of the uncompressed bytes (the input of a deflate job, the
    /// output of an inflate job).
    var crc: UInt32 = 0
    var error: Error?
    /// Deflate: the value's last segment (ends the deflate stream).
    var isLast = false
    /// Inflate: the bytes the segment must inflate to.
    var expectedLength = 0
    /// Set by `SegmentWorkers` only: the job holds one of its slots.
    var holdsSlot = false
    private let done = DispatchSemaphore(value: 0)
    /// Whether `done` was taken: the owner's view, touched only by the owner.
    private var completed = false

    init(inputCapacity: Int, outputCapacity: Int) {
        input = .allocate(byteCount: inputCapacity, alignment: 16)
        output = .allocate(byteCount: outputCapacity, alignment: 16)
    }

    deinit {
        input.deallocate()
        output.deallocate()
    }

    /// Makes room for `count` output bytes, keeping what is there.
    func growOutput(to count: Int) {
        guard count > output.count else { return }
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
        bigger.copyMemory(from: UnsafeRawBufferPointer(rebasing: output[0..<produced]))
        output.deallocate()
        output = bigger
    }

    /// Makes room for `count` input bytes (their old contents are not kept).
    func growInput(to count: Int) {
        guard count > input.count else { return }
        input.deallocate()
        input = .allocate(byteCount: count, alignment: 16)
    }

    /// Called by whoever ran the work, once it has returned.
    func signalDone() { done.signal() }

    /// The owner's check: whether the work has returned (never blocks).
    var isDone: Bool {
        if !completed && done.wait(timeout: .now()) == .success { completed = true }
        return completed
    }

    /// The owner waits for the work to return.
    func waitUntilDone() {
        if !completed { done.wait(); completed = true }
    }

    /// Ready for the next segment (its work has returned).
    func reset() {
        completed = false
        inputCount = 0
        produced = 0
        crc = 0
        error = nil
        isLast = false
    }
}
