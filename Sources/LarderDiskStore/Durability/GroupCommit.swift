import LarderStorage
import LarderValueFile
import Dispatch
import FoundationEssentials
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// Group commit: concurrent durable writes share their flushes.
///
/// A writer that needs what it wrote (a file's data, a rename, an unlink)
/// on disk calls `afterDurable` (answer later) or `waitDurable` (block the
/// thread) once it has written it, and acknowledges only when told. Calls
/// join the *open* batch. One flush loop, on `flushQueue`, closes the open
/// batch (later calls start the next one), issues a single `syncfs(2)` on
/// the data directory, which on Linux writes back every dirty page and all
/// metadata of that filesystem and flushes the disk's cache, then tells
/// the whole batch; it goes on while batches keep forming, and stops when
/// none is waiting. A durable PUT waits twice, for its file's data before
/// its rename and for the rename after it: the two stages of different
/// writes ride the same flushes.
///
/// Invariant: a waiter is told "durable" only by a flush that *began after
/// it called* (its batch closes as that flush begins), so everything it
/// wrote before calling is on disk. A flush's error goes to every waiter of
/// its batch, and to every waiter of the batch that formed while it ran:
/// what they wrote meanwhile may be what failed (a writeback error is
/// reported by the first `syncfs` after it, whichever batch that serves).
/// No other batch sees it: a batch begun after the failed flush ended is
/// answered by its own flush alone.
///
/// One `syncfs` per batch was measured against the alternative of one
/// thread issuing `sync_file_range` then `fdatasync` for each file and
/// `fsync` for each directory of the batch: on the development machine's
/// ext4 (no journal) that was 3 to 7 times slower (without a journal each
/// of those calls writes and flushes on its own).
///
/// Locking: `lock` guards `open`, `flushing`, `descriptor`,
/// `flushWillBegin` and the batches' fields; the flush itself runs
/// without it. Callers may hold store locks (the root queue, a stripe
/// barrier, `counterLock`) when they call in: `lock` is innermost, and the
/// loop takes no other lock and calls no completion while holding it.
/// Completions run on `flushQueue` and must be quick (hop elsewhere for
/// I/O). Threads: `waitDurable` blocks its caller, as the `fsync` it
/// replaces did; `afterDurable` holds none; the loop is one queue, never
/// a thread per waiter.
final class GroupCommit: @unchecked Sendable {  // state guarded by `lock`
    /// Called with nil once the waiter's writes are durable, or with the
    /// error of the flush that should have made them so.
    typealias Completion = @Sendable (StoreError?) -> Void

    private final class Batch {
        var completions: [Completion] = []
        /// Set before the batch's own flush: an earlier flush failed while
        /// this batch was open.
        var error: StoreError?
    }

    private let lock = Lock()
    /// The batch new waiters join.
    private var open = Batch()
    /// The flush loop is running (or queued) on `flushQueue`.
    private var flushing = false
    /// An open descriptor on the filesystem to flush (the data directory).
    private var descriptor: Int32
    private let path: String
    /// Runs the flush loop: one flush at a time, by one thread.
    private let flushQueue = DispatchQueue(label: "larder.store.commit")

    /// Counts the flushes issued (the store counts the writes).
    let counts: DurabilityCounts

    /// Opens `path` (the data directory) to flush its filesystem.
    init(path: String, counts: DurabilityCounts) throws {
        self.path = path
        self.counts = counts
        descriptor = try POSIX.open(path, O_RDONLY | O_DIRECTORY)
    }

    deinit {
        if descriptor >= 0 { Glibc.close(descriptor) }
    }

    /// Calls `completion` (on the committer's queue: it must be quick, or
    /// hop elsewhere) once everything written before this call is on disk,
    /// or with the error that kept it from getting there.
    func afterDurable(_ completion: @escaping Completion) {
        let start = lock.withLock { () -> Bool in
            open.completions.append(completion)
            if flushing { return false }
            flushing = true
            return true
        }
        if start { flushQueue.async { self.flushLoop() } }
    }

    /// Blocks the calling thread until everything it wrote before the call
    /// is on disk; throws the flush's error (then it may not be).
    func waitDurable() throws {
        let done = DispatchSemaphore(value: 0)
        let result = Locked<StoreError?>(nil)
        afterDurable { error in
            result.withLock { $0 = error }
            done.signal()
        }
        done.wait()
        if let error = result.withLock({ $0 }) { throw error }
    }

    /// Flushes batch after batch while waiters keep coming.
    private func flushLoop() {
        while true {
            let next = lock.withLock { () -> (Batch, (@Sendable () -> Void)?)? in
                if open.completions.isEmpty {
                    flushing = false
                    return nil
                }
                // The batch closes as its flush begins: everything its
                // waiters wrote came before this point.
                let batch = open
                open = Batch()
                return (batch, flushWillBegin)
            }
            guard let (batch, hook) = next else { return }
            hook?()
            // Read after the hook: a test that breaks the committer while it
            // holds this flush must see it fail, not flush a descriptor
            // number another file has taken since.
            let fd = lock.withLock { descriptor }
            let error = Self.flush(fd, path: path)
            counts.addFlush()
            if let error {
                // What the next batch's waiters wrote during this flush may
                // be what failed to reach the disk: they fail too. Only
                // waiters that joined while it ran: an empty open batch
                // takes no error, or a writer arriving after the failure,
                // whenever that is, would inherit it from a flush that
                // never concerned it.
                lock.withLock {
                    if !open.completions.isEmpty { open.error = open.error ?? error }
                }
            }
            let failure = batch.error ?? error
            for completion in batch.completions { completion(failure) }
        }
    }

    private static func flush(_ fd: Int32, path: String) -> StoreError? {
        while true {
            if syncfs(fd) == 0 { return nil }
            if errno == EINTR { continue }
            return StoreError.posix("syncfs", path)
        }
    }

    /// glibc's `syncfs`, which Swift's Glibc module leaves out (it is
    /// declared only with _GNU_SOURCE). Looked up once.
    private static let syncfs: @convention(c) (Int32) -> Int32 = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "syncfs") else {  // RTLD_DEFAULT
            fatalError("the C library has no syncfs")
        }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
    }()

    /// Tests: called on the committer's queue after a batch closed, just
    /// before its flush (a test holds the flush there to see who joins).
    private var flushWillBegin: (@Sendable () -> Void)?

    func onFlushWillBeginForTesting(_ body: (@Sendable () -> Void)?) {
        lock.withLock { flushWillBegin = body }
    }

    /// Tests: from now on every flush is a `syncfs` on a closed descriptor,
    /// which fails with EBADF (a real failing system call, not a fake disk).
    func breakForTesting() {
        lock.withLock {
            if descriptor >= 0 { Glibc.close(descriptor) }
            descriptor = -1
        }
    }

    /// Tests: undoes `breakForTesting`, so the next flush works again.
    func repairForTesting() throws {
        let fd = try POSIX.open(path, O_RDONLY | O_DIRECTORY)
        lock.withLock {
            if descriptor >= 0 { Glibc.close(descriptor) }
            descriptor = fd
        }
    }
}
