import LarderStorage
import LarderValueFile
import Dispatch
import FoundationEssentials
import LarderSupport
import Synchronization
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// One gzip file per key under `<data>/values`, a symlink to the current
/// generation directory `gen-N`.
///
/// Locking: `rootQueue` is a concurrent queue; every operation holds it
/// shared (plain `sync`) while it resolves paths in the current generation,
/// and a reset or prefix delete takes it exclusively (`.barrier`) for the
/// moment it swaps directories. Below it, `stripes` are concurrent queues
/// chosen by key: reads open files under a shared `sync`, writes publish
/// (check + rename) under a `.barrier`, so writes to one key are exclusive
/// and writes to different keys run in parallel. File content is written
/// before any lock is taken; only the rename is serialized.
///
/// Durability (with `options.fsync`): a write waits on `commit`, the group
/// committer, twice: once for its file's data before the rename, once for
/// the rename after it; concurrent writes share those flushes (see
/// `GroupCommit`). Only then is it acknowledged: `finish` answers later
/// (`StoreReply.later`), and no thread waits for the flushes. Lock order:
/// `rootQueue`, then a stripe, then `counterLock`, then the committer's
/// own lock (innermost: it calls out to nothing while holding it).
///
/// Start-up does not read the values: `init` returns once the directory is
/// locked and the generation known, and the scan that reads every header
/// (to fill the key index, the totals and the expiry index, and to remove
/// stale temp files) runs in the background on `scanQueue`. Meanwhile
/// listings walk the directories (`DirectoryLister`) and the totals count
/// only what was scanned so far; see `KeyIndex` for how writes and deletes
/// during the scan stay authoritative.
public final class DiskStore: ValueStore, @unchecked Sendable {
    public let options: DiskStoreOptions
    let logger: Logger
    let dataDirectory: String
    var lock: FileLock?
    package let zlib: ZlibPool
    /// Values compressed per `CompressionMode`, for `/metrics`.
    public let compressionModes: CompressionModeCounts? = CompressionModeCounts()
    /// Flushes issued and durable writes acknowledged, for `/metrics`.
    public let durability: DurabilityCounts? = DurabilityCounts()
    /// Shares flushes between concurrent durable writes; nil without fsync.
    let commit: GroupCommit?
    let cache: ValueCache
    /// Told of every change, from under the write barrier.
    let changes: StoreChangeObserver?
    /// Keys with an expiry time, for the sweep.
    let expiries = ExpiryIndex()
    /// Every key with its listing metadata, in byte order (see `KeyIndex`).
    let index = KeyIndex()
    /// Runs the start-up scan, once.
    let scanQueue = DispatchQueue(label: "larder.store.scan", qos: .utility)
    /// Set by `close`: the scan stops at its next file.
    let scanCancelled = Atomic<Bool>(false)

    let rootQueue = DispatchQueue(label: "larder.store.root", attributes: .concurrent)
    let stripes: [DispatchQueue]
    /// Deletes directories the store has let go of, in the background.
    let reaper = DispatchQueue(label: "larder.store.reaper", qos: .utility)
    /// Runs the expiry sweep (see DiskStore+Expiry).
    let sweepQueue = DispatchQueue(label: "larder.store.sweep", qos: .utility)
    /// Set once, at the end of init (a never-resumed source must not be
    /// released, so it is made only when nothing can throw any more).
    var sweepTimer: DispatchSourceTimer?

    // Guarded by rootQueue: read under sync, written under barrier.
    var generation: Int
    var valuesRoot: String

    /// Keys and bytes stored, moved where each change takes effect.
    let totals = StoreTotals()

    // Guarded by counterLock.
    var lastVersion: UInt64 = 0
    /// Versions below this are safe to hand out: it is on disk (`version`),
    /// so after a restart, even with the clock set back, no ETag repeats.
    var versionCeiling: UInt64 = 0
    static let ceilingStep: UInt64 = 3_600_000_000_000  // one hour of nanoseconds
    let counterLock = Lock()

    public init(options: DiskStoreOptions, logger: Logger = .silent(), changes: StoreChangeObserver? = nil) throws {
        self.options = options
        self.logger = logger
        self.changes = changes
        self.dataDirectory = Self.absolute(options.dataDirectory)
        self.zlib = ZlibPool(level: options.gzipLevel)
        self.cache = ValueCache(capacity: options.cacheBytes, stripes: max(1, options.stripes))
        self.stripes = (0..<max(1, options.stripes)).map {
            DispatchQueue(label: "larder.store.stripe.\($0)", attributes: .concurrent)
        }
        if (try? FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)) == nil {
            mkdir(dataDirectory, 0o755)  // for the errno that names the cause
            throw StoreError.posix("mkdir", dataDirectory)
        }
        self.lock = try FileLock(path: dataDirectory + "/larder.lock")
        commit = options.fsync ? try GroupCommit(path: dataDirectory, counts: durability!) : nil
        (generation, valuesRoot) = try Self.openGeneration(dataDirectory, fsync: options.fsync)
        // A restore a crash interrupted is finished or dropped first: the
        // generation it may adopt must not be taken for a leftover.
        _ = try recoverRestores()
        removeLeftovers()
        lastVersion = try Self.readVersionCeiling(dataDirectory, logger: logger)
        try saveVersionCeiling(max(lastVersion, UInt64(max(0, Clock.nowNanos()))) + Self.ceilingStep)
        // The scan runs later; an unreadable values directory still fails here.
        guard let dir = opendir(valuesRoot) else { throw StoreError.posix("opendir", valuesRoot) }
        closedir(dir)
        // Every temp file of this run is named by a version above this one.
        let tempCutoff = try nextVersion() & ~options.versionTag
        startExpirySweep()
        let (scanGeneration, scanRoot) = (generation, valuesRoot)
        scanQueue.async { [self] in scanValues(generation: scanGeneration, root: scanRoot, tempCutoff: tempCutoff) }
    }

    // MARK: - Shared helpers

    func stripeIndex(for key: StoreKey) -> Int {
        var h: UInt64 = 0xcbf29ce484222325
        for b in key.string.utf8 { h = (h ^ UInt64(b)) &* 0x100000001b3 }
        return Int(h % UInt64(stripes.count))
    }

    /// Runs `body` on `queue` (shared, or exclusive with `barrier`) with typed errors.
    func locked<T>(_ queue: DispatchQueue, barrier: Bool = false, _ body: () throws -> T) throws -> T {
        try queue.sync(flags: barrier ? .barrier : [], execute: body)
    }

    /// A unique, increasing version for each write: nanoseconds of the wall
    /// clock, bumped when two writes share one.
    package func nextVersion() throws -> UInt64 {
        // The system clock, never the namespace's: versions rise whatever a test does to its time.
        let now = UInt64(max(0, Clock.nowNanos()))
        return try counterLock.withLock {
            let next = max(lastVersion + 1, now)
            if next >= versionCeiling {
                // Once an hour of versions: a small fsync'd write. A version
                // is never handed out above what is on disk.
                try saveVersionCeiling(next + Self.ceilingStep)
            }
            lastVersion = next
            return next | options.versionTag
        }
    }

    /// Reads the saved ceiling; a missing file is a new store. An empty or
    /// unreadable number (a crash right after the first start, without
    /// fsync) is not fatal: the clock takes over.
    static func readVersionCeiling(_ data: String, logger: Logger) throws -> UInt64 {
        let path = data + "/version"
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
            return 0
        }
        guard let value = UInt64(text.trimmingWhitespaceAndNewlines()) else {
            logger.warning("\(path) holds no version number; versions continue from the clock")
            return 0
        }
        return value
    }

    /// Writes the ceiling atomically (temp file, rename).
    func saveVersionCeiling(_ ceiling: UInt64) throws {
        let path = dataDirectory + "/version"
        let temp = path + ".new"
        let fd = try POSIX.open(temp, O_WRONLY | O_CREAT | O_TRUNC)
        defer { Glibc.close(fd) }
        try Array("\(ceiling)\n".utf8).withUnsafeBytes { try POSIX.writeAll(fd, $0, path: temp) }
        if options.fsync { try POSIX.fsync(fd, path: temp) }
        if rename(temp, path) != 0 { throw StoreError.posix("rename", temp) }
        if options.fsync { try POSIX.fsyncDirectory(dataDirectory) }
        versionCeiling = ceiling
    }

    /// The time expiry and modification times read: the namespace's clock.
    @inline(__always)
    func nowNanos() -> Int64 { clock.nowNanos() }

    /// Its namespace's clock, which a test may move (`moveClock`).
    public let clock = StoreClock()

    /// Values and bytes stored right now (no lock: see `StoreTotals`).
    public var stats: StoreStats { totals.stats }

    func currentRoot() -> String { rootQueue.sync { valuesRoot } }

    // MARK: - Listing

    /// Keys under `prefix` in byte order, after `after`, at most `limit`
    /// entries (keys and, with `groupByDirectory`, common prefixes).
    /// From the key index once the start-up scan is done, by walking the
    /// directories before.
    public func list(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool) -> StoreReply<StoreListing> {
        .catching { try listValues(prefix: prefix, after: after, limit: limit, groupByDirectory: groupByDirectory) }
    }

    /// `list`, on the caller's thread.
    package func listValues(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool) throws -> StoreListing {
        if index.isReady {
            // Under the root queue, shared: a restore changes the index for
            // a whole prefix under its barrier, and a page must show the
            // set before it or after it, never the index half-way.
            return rootQueue.sync {
                index.list(prefix: Array(prefix.string.utf8), after: after.map { Array($0.utf8) }, limit: limit,
                           groupByDirectory: groupByDirectory, nowNanos: nowNanos())
            }
        }
        return try listDirectories(prefix: prefix, after: after, limit: limit, groupByDirectory: groupByDirectory)
    }

    /// The listing by walking the directories and opening each value file.
    func listDirectories(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool,
                         nowNanos: Int64? = nil) throws -> StoreListing {
        let root = currentRoot()
        var lister = DirectoryLister(after: after.map { Array($0.utf8) }, limit: limit,
                                     groupByDirectory: groupByDirectory, nowNanos: nowNanos ?? self.nowNanos(), logger: logger)
        let directory = prefix.segments.isEmpty ? root : root + "/" + DiskNames.relativePath(of: prefix)
        try lister.walk(directory, keyPrefix: Array(prefix.string.utf8))
        return lister.finish()
    }

    // MARK: - Health

    /// Writes, reads back and removes a probe file next to the values.
    public func checkHealth() -> StoreReply<Void> {
        .catching { try probeHealth() }
    }

    private func probeHealth() throws {
        let path = dataDirectory + "/.health-\(DiskNames.hex(try nextVersion()))"
        let fd = try POSIX.open(path, O_RDWR | O_CREAT | O_EXCL)
        defer { Glibc.close(fd); unlink(path) }
        let probe: [UInt8] = Array("ok".utf8)
        try probe.withUnsafeBytes { (raw) in try POSIX.writeAll(fd, raw, path: path) }
        var back = [UInt8](repeating: 0, count: 2)
        let n = try back.withUnsafeMutableBytes { (raw) in try POSIX.pread(fd, raw, at: 0, path: path) }
        guard n == 2, back == probe else { throw StoreError.corrupt(path: path, reason: "health probe read back wrong bytes") }
        let root = currentRoot()
        if access(root, R_OK | W_OK | X_OK) != 0 { throw StoreError.posix("access", root) }
    }

    /// Waits for the start-up scan and background deletes (tests, shutdown).
    public func drainBackgroundWork() {
        scanQueue.sync {}
        reaper.sync {}
    }

    /// Finishes background work and releases the data directory's lock, so
    /// another server may open it. Call after the last request.
    public func close() {
        sweepTimer?.cancel()
        scanCancelled.store(true, ordering: .relaxed)
        drainBackgroundWork()
        // A clean stop saves the exact ceiling, so versions after a restart
        // follow the clock instead of starting an hour ahead.
        counterLock.withLock {
            do { try saveVersionCeiling(lastVersion + 1) } catch {
                logger.warning("cannot save the version ceiling: \(error)")
            }
        }
        rootQueue.sync(flags: .barrier) { lock = nil }
    }
}
