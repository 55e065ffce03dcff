import LarderStorage
import LarderValueFile
import Dispatch
import Foundation
import LarderSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

public struct DiskStoreOptions: Sendable {
    public var dataDirectory: String
    /// Make each write durable before it is acknowledged (flushes shared
    /// between concurrent writes: `GroupCommit`). Off: no flush at all.
    public var fsync: Bool = true
    /// zlib level for values the store compresses itself (1...9).
    public var gzipLevel: Int32 = DiskStoreOptions.defaultGzipLevel
    /// Stripes of the per-key write barrier.
    public var stripes: Int = 64
    /// Bytes of small values kept in memory for reads (0 turns it off).
    public var cacheBytes: Int = 32 << 20
    /// Largest value, decompressed (a gzip body may not inflate past it).
    public var maxValueSize: Int64 = 1 << 30
    /// OR-ed into every version this store hands out. Versions are wall-clock
    /// nanoseconds (below 2^63 until 2262), so a store with the top bit as its
    /// tag (the fixture layer's) never repeats another store's ETag.
    public var versionTag: UInt64 = 0
    /// Tests: called by the start-up scan with the keys of each batch of
    /// headers it read, before it adds them to the index.
    var scanBatchHook: (@Sendable ([String]) -> Void)? = nil
    /// Tests: called before each walk of the start-up scan with its attempt
    /// number (0 first); throwing fails that walk as a failing directory would.
    var scanWalkHook: (@Sendable (_ attempt: Int) throws -> Void)? = nil

    /// The value files' default level (`CompressionMode.defaultGzipLevel`).
    public static let defaultGzipLevel: Int32 = CompressionMode.defaultGzipLevel

    public init(dataDirectory: String, fsync: Bool = true, gzipLevel: Int32 = DiskStoreOptions.defaultGzipLevel) {
        self.dataDirectory = dataDirectory
        self.fsync = fsync
        self.gzipLevel = gzipLevel
    }
}

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
/// `GroupCommit`). Only then is it acknowledged. A PUT over HTTP waits
/// without its thread (`ValueUpload.finish(then:)`). Lock order:
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
    private var lock: FileLock?
    package let zlib: ZlibPool
    /// Values compressed per `CompressionMode`, for `/metrics`.
    public let compressionModes: CompressionModeCounts? = CompressionModeCounts()
    /// Flushes issued and durable writes acknowledged, for `/metrics`.
    public let durability: DurabilityCounts? = DurabilityCounts()
    /// Shares flushes between concurrent durable writes; nil without fsync.
    let commit: GroupCommit?
    let cache: ValueCache
    /// Told of every change, from under the write barrier.
    private let changes: StoreChangeObserver?
    /// Keys with an expiry time, for the sweep.
    let expiries = ExpiryIndex()
    /// Every key with its listing metadata, in byte order (see `KeyIndex`).
    let index = KeyIndex()
    /// Runs the start-up scan, once.
    private let scanQueue = DispatchQueue(label: "larder.store.scan", qos: .utility)
    /// Set by `close`: the scan stops at its next file.
    private let scanCancelled = Atomic<Bool>(false)

    private let rootQueue = DispatchQueue(label: "larder.store.root", attributes: .concurrent)
    private let stripes: [DispatchQueue]
    /// Deletes directories the store has let go of, in the background.
    private let reaper = DispatchQueue(label: "larder.store.reaper", qos: .utility)
    /// Runs the expiry sweep (see DiskStore+Expiry).
    let sweepQueue = DispatchQueue(label: "larder.store.sweep", qos: .utility)
    /// Set once, at the end of init (a never-resumed source must not be
    /// released, so it is made only when nothing can throw any more).
    var sweepTimer: DispatchSourceTimer?

    // Guarded by rootQueue: read under sync, written under barrier.
    private var generation: Int
    private var valuesRoot: String

    /// Keys and bytes stored, moved where each change takes effect.
    let totals = StoreTotals()

    // Guarded by counterLock.
    private var lastVersion: UInt64 = 0
    /// Versions below this are safe to hand out: it is on disk (`version`),
    /// so after a restart, even with the clock set back, no ETag repeats.
    private var versionCeiling: UInt64 = 0
    private static let ceilingStep: UInt64 = 3_600_000_000_000  // one hour of nanoseconds
    private let counterLock = Lock()

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
        removeLeftovers()
        lastVersion = try Self.readVersionCeiling(dataDirectory, logger: logger)
        try saveVersionCeiling(max(lastVersion, UInt64(max(0, Self.nowNanos()))) + Self.ceilingStep)
        // The scan runs later; an unreadable values directory still fails here.
        guard let dir = opendir(valuesRoot) else { throw StoreError.posix("opendir", valuesRoot) }
        closedir(dir)
        // Every temp file of this run is named by a version above this one.
        let tempCutoff = try nextVersion() & ~options.versionTag
        startExpirySweep()
        let (scanGeneration, scanRoot) = (generation, valuesRoot)
        scanQueue.async { [self] in scanValues(generation: scanGeneration, root: scanRoot, tempCutoff: tempCutoff) }
    }

    // MARK: - Start-up

    static func absolute(_ path: String) -> String {
        var p = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
        return p
    }

    /// Reads `values -> gen-N`, creating the first generation on a new directory.
    private static func openGeneration(_ data: String, fsync: Bool) throws -> (Int, String) {
        let link = data + "/values"
        var buffer = [CChar](repeating: 0, count: 256)
        let n = readlink(link, &buffer, 255)
        if n > 0 {
            let target = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard target.hasPrefix("gen-"), let number = Int(target.dropFirst(4)) else {
                throw StoreError.corrupt(path: link, reason: "the link points to '\(target)', not to a gen-N directory")
            }
            let root = data + "/" + target
            if try POSIX.lstatIfExists(root) == nil {
                throw StoreError.corrupt(path: link, reason: "its generation directory \(target) is missing")
            }
            return (number, root)
        }
        if errno != ENOENT { throw StoreError.posix("readlink", link) }
        // No link: a new directory, or a crash during the very first start
        // (an empty gen-N). Generations with values but no link are not
        // guessed at: a person should look.
        for (number, path) in generations(data) where (try POSIX.directoryEntries(path))?.isEmpty == false {
            throw StoreError.corrupt(path: link, reason: "the link is missing but gen-\(number) holds values; point it at the right generation (ln -s gen-N values)")
        }
        let number = try switchGeneration(data, after: generations(data).map(\.number).max() ?? 0, fsync: fsync)
        return (number, data + "/gen-\(number)")
    }

    /// The gen-N directories in the data directory.
    private static func generations(_ data: String) -> [(number: Int, path: String)] {
        (try? POSIX.directoryEntries(data))??.compactMap { entry in
            let name = String(decoding: entry.name, as: UTF8.self)
            guard entry.isDirectory, name.hasPrefix("gen-"), let n = Int(name.dropFirst(4)) else { return nil }
            return (n, data + "/" + name)
        } ?? []
    }

    /// Creates a new, empty `gen-N` with N above `after` and every existing
    /// one (a leftover may still be queued for deletion), then points
    /// `values` at it in one rename. Returns N.
    private static func switchGeneration(_ data: String, after: Int, fsync: Bool) throws -> Int {
        var number = after + 1
        while mkdir(data + "/gen-\(number)", 0o755) != 0 {
            guard errno == EEXIST else { throw StoreError.posix("mkdir", data + "/gen-\(number)") }
            number += 1
        }
        let staging = data + "/values.new"
        unlink(staging)
        if symlink("gen-\(number)", staging) != 0 { throw StoreError.posix("symlink", staging) }
        if fsync { try POSIX.fsyncDirectory(data) }
        if rename(staging, data + "/values") != 0 { throw StoreError.posix("rename", staging) }
        if fsync { try POSIX.fsyncDirectory(data) }
        return number
    }

    /// Old generations and trash from a reset or prefix delete that a crash
    /// interrupted: nothing points at them, so they go in the background.
    private func removeLeftovers() {
        guard let entries = try? POSIX.directoryEntries(dataDirectory) else { return }
        let current = "gen-\(generation)"
        var doomed: [String] = []
        for entry in entries {
            let name = String(decoding: entry.name, as: UTF8.self)
            if name == "values.new" { unlink(dataDirectory + "/" + name) }
            if entry.isDirectory && ((name.hasPrefix("gen-") && name != current) || name == "trash") {
                doomed.append(dataDirectory + "/" + name)
            }
        }
        for path in doomed {
            logger.notice("removing \(path) left by an interrupted delete")
            reaper.async { POSIX.removeTree(path) }
        }
    }

    /// The start-up scan, in the background: reads every value's header into
    /// the key index (keys written or deleted since are left alone), the
    /// expiry index and the totals, and removes temp files of writes a crash
    /// interrupted (named below `tempCutoff`; this run's are above it).
    /// Batches are applied under the root queue, shared, checking that no
    /// reset switched generations meanwhile (a reset leaves the index empty
    /// and complete, and the scan then stops). At the end, under the root
    /// barrier, the totals are set from the index, exact from then on.
    ///
    /// A walk that throws (a directory it cannot read, no descriptors left)
    /// is tried again after a pause, `attempt` counting, the pauses
    /// doubling up to half a minute: until a walk completes the index stays
    /// in build mode (listings walk the directories, deletes leave
    /// tombstones), so it must not stop there. Retrying is safe: a batch adds
    /// only keys the index does not know yet, and the totals are set from
    /// the index when a walk completes.
    private func scanValues(generation scanGeneration: Int, root: String, tempCutoff: UInt64, attempt: Int = 0) {
        let started = DispatchTime.now().uptimeNanoseconds
        var values = 0, temps = 0, damaged = 0, expiring = 0
        var damagedStored: Int64 = 0
        var batch: [(key: [UInt8], meta: ValueMetadata, stored: Int64)] = []
        batch.reserveCapacity(256)
        var current = true
        func apply() {
            guard !batch.isEmpty else { return }
            options.scanBatchHook?(batch.map(\.meta.key))
            current = rootQueue.sync { () -> Bool in
                guard generation == scanGeneration else { return false }
                var keys = 0, logical: Int64 = 0, stored: Int64 = 0
                index.addScanned(batch) { meta, size in
                    keys += 1; logical += Int64(meta.size); stored += size
                    if let expires = meta.expiresNanos, let key = try? StoreKey(meta.key) {
                        noteExpiry(key, at: expires, version: meta.version)
                        expiring += 1
                    }
                }
                // Only until the end of the scan, which sets the totals exactly.
                totals.add(keys: keys, logical: logical, stored: stored)
                return true
            }
            batch.removeAll(keepingCapacity: true)
        }
        var failure: Error?
        do {
            try options.scanWalkHook?(attempt)
            try ValueTreeWalker.walk(root, strict: true) { item in
                if scanCancelled.load(ordering: .relaxed) { return false }
                switch item {
                case .value(let path):
                    values += 1
                    // An unreadable file still counts as a key (it can be
                    // deleted); its decompressed size is unknown, counted as 0.
                    // It is not listed (the directory walk skips it too).
                    guard let file = try? ValueFileHeader.inspect(path: path) else { return true }
                    guard case .success(let meta) = file.metadata else {
                        damaged += 1; damagedStored += file.fileSize
                        return true
                    }
                    batch.append((Array(meta.key.utf8), meta, file.fileSize))
                    if batch.count == 256 { apply() }
                case .temp(let path, let name):
                    if let version = UInt64(String(decoding: name.dropFirst(2), as: UTF8.self), radix: 16),
                       version & ~options.versionTag < tempCutoff {
                        unlink(path)
                        temps += 1
                    }
                }
                return current
            }
            if !scanCancelled.load(ordering: .relaxed) { apply() }
        } catch {
            failure = error
        }
        let ms = (DispatchTime.now().uptimeNanoseconds - started) / 1_000_000
        if let failure {
            let pause = min(30, 0.1 * Double(1 << min(attempt, 9)))
            let message = "store \(dataDirectory): the start-up scan failed after \(values) values (\(failure)); "
                + "trying again in \(pause) s, meanwhile listings walk the directories and the totals are incomplete"
            if attempt == 0 { logger.error(message) } else { logger.debug(message) }
            scanQueue.asyncAfter(deadline: .now() + pause) { [weak self] in
                guard let self, !scanCancelled.load(ordering: .relaxed) else { return }
                guard rootQueue.sync(execute: { generation == scanGeneration }) else { return }
                scanValues(generation: scanGeneration, root: root, tempCutoff: tempCutoff, attempt: attempt + 1)
            }
            return
        }
        if scanCancelled.load(ordering: .relaxed) { return }
        let finished = rootQueue.sync(flags: .barrier) { () -> Bool in
            guard generation == scanGeneration else { return false }
            index.finishBuild()
            let t = index.totals
            _ = totals.reset()
            totals.add(keys: t.keys + damaged, logical: t.logical, stored: t.stored + damagedStored)
            return true
        }
        let stats = totals.stats
        logger.notice("start-up scan: \(values) values in \(ms) ms" + (finished ? "" : " (a reset came first)"))
        logger.info("store \(dataDirectory): \(stats.keys) values (\(stats.logicalBytes) bytes, \(stats.storedBytes) on disk, "
                    + "\(expiring) with an expiry), \(temps) stale temp files removed, index \(index.approximateBytes) bytes")
        if damaged > 0 { logger.warning("store \(dataDirectory): \(damaged) value files have an unreadable header") }
    }

    /// Whether the start-up scan is done (listings use the key index, the
    /// totals are exact).
    public var isIndexReady: Bool { index.isReady }

    /// Waits for the start-up scan (tests, tools).
    public func waitForIndex() { scanQueue.sync {} }

    // MARK: - Shared helpers

    private func stripeIndex(for key: StoreKey) -> Int {
        var h: UInt64 = 0xcbf29ce484222325
        for b in key.string.utf8 { h = (h ^ UInt64(b)) &* 0x100000001b3 }
        return Int(h % UInt64(stripes.count))
    }

    /// Runs `body` on `queue` (shared, or exclusive with `barrier`) with typed errors.
    private func locked<T>(_ queue: DispatchQueue, barrier: Bool = false, _ body: () throws -> T) throws -> T {
        try queue.sync(flags: barrier ? .barrier : [], execute: body)
    }

    /// A unique, increasing version for each write: nanoseconds of the wall
    /// clock, bumped when two writes share one.
    package func nextVersion() throws -> UInt64 {
        let now = UInt64(max(0, Self.nowNanos()))
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
    private static func readVersionCeiling(_ data: String, logger: Logger) throws -> UInt64 {
        let path = data + "/version"
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
            return 0
        }
        guard let value = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            logger.warning("\(path) holds no version number; versions continue from the clock")
            return 0
        }
        return value
    }

    /// Writes the ceiling atomically (temp file, rename).
    private func saveVersionCeiling(_ ceiling: UInt64) throws {
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

    static func nowNanos() -> Int64 { Clock.nowNanos() }

    /// Values and bytes stored right now (no lock: see `StoreTotals`).
    public var stats: StoreStats { totals.stats }

    private func currentRoot() -> String { rootQueue.sync { valuesRoot } }

    // MARK: - Writes

    /// Starts a write: a temp file in the key's directory. Feed it the body
    /// with `write`, then `finish` publishes it.
    public func beginUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
                            expiresNanos: Int64? = nil, condition: WriteCondition? = nil) throws -> ValueWriter {
        try makeUpload(key: key, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos, condition: condition)
    }

    func makeUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
                    expiresNanos: Int64?, condition: WriteCondition?) throws -> ValueUpload {
        try ValueMetadata.checkContentType(contentType)
        let version = try nextVersion()
        let (path, fd) = try createTempFile(for: key, name: DiskNames.tempPrefix + DiskNames.hex(version))
        let meta = ValueMetadata(key: key.string, contentType: contentType, size: 0, version: 0,
                                 modifiedNanos: 0, expiresNanos: expiresNanos)
        return try ValueUpload(destination: self, key: key, metadata: meta, encoding: encoding, tempPath: path, fd: fd,
                               maxSize: options.maxValueSize, condition: condition)
    }

    private func createTempFile(for key: StoreKey, name: String) throws -> (String, Int32) {
        try locked(rootQueue) { () -> (String, Int32) in
            let directories = DiskNames.relativeDirectories(key.segments.dropLast())
            let directory = ([valuesRoot] + directories).joined(separator: "/")
            let path = directory + "/" + name
            var attempt = 0
            while true {
                let fd = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                if fd >= 0 { return (path, fd) }
                let code = errno
                // A missing directory is created; a concurrent delete may
                // remove an empty one between mkdir and open, so try again.
                guard code == ENOENT, attempt < 8 else { throw StoreError.posix("open", path, code) }
                attempt += 1
                try makeDirectories(root: valuesRoot, segments: key.segments.dropLast())
            }
        }
    }

    /// mkdir -p for key directories, with the `\name` file in hashed ones.
    /// A concurrent delete may prune an empty parent between two mkdirs
    /// (ENOENT): the chain is then started again.
    private func makeDirectories(root: String, segments: ArraySlice<String>) throws {
        var attempt = 0
        while true {
            do {
                try makeDirectoriesOnce(root: root, segments: segments)
                return
            } catch StoreError.io(let op, _, let code) where op == "mkdir" && code == ENOENT && attempt < 16 {
                attempt += 1
            }
        }
    }

    private func makeDirectoriesOnce(root: String, segments: ArraySlice<String>) throws {
        var current = root
        for segment in segments {
            current += "/" + DiskNames.directoryName(segment)
            if mkdir(current, 0o755) == 0 {
                if DiskNames.isHashedDirectory(segment) {
                    let namePath = current + "/" + DiskNames.hashedNameFile
                    let fd = try POSIX.open(namePath, O_WRONLY | O_CREAT | O_TRUNC)
                    defer { Glibc.close(fd) }
                    try Array(segment.utf8).withUnsafeBytes { (raw) in try POSIX.writeAll(fd, raw, path: namePath) }
                }
                // No flush of its own: every caller is a write that waits
                // on the group committer after this (for its data before
                // its rename, or for the rename), and that flush commits
                // these directories and name files too.
            } else if errno != EEXIST {
                throw StoreError.posix("mkdir", current)
            }
        }
    }

    /// Makes a finished temp file (`fileSize` bytes, made durable first by
    /// the caller) the key's value, if `condition` holds for the current one
    /// (checked under the same barrier as the rename). Returns whether the
    /// key is new. The caller makes the rename durable (a flush that begins
    /// after this returns) before it acknowledges the write.
    func publish(tempPath: String, fd: Int32, key: StoreKey, metadata: ValueMetadata, fileSize: Int64,
                 condition: WriteCondition?) throws -> Bool {
        try locked(rootQueue) { () -> Bool in
            // A write whose flushes outlived `close` (a connection dropped at
            // the end of the shutdown grace) must not rename into a directory
            // this process no longer holds the lock of.
            guard lock != nil else { throw StoreError.posix("publish", tempPath, ECANCELED) }
            let finalPath = valuesRoot + "/" + DiskNames.relativePath(of: key)
            let stripe = stripeIndex(for: key)
            // The value being replaced is read before the key's barrier is
            // taken (it is I/O, and the barrier serializes the stripe). Every
            // publish and delete in the stripe bumps its epoch under the
            // barrier, after its rename or unlink: an unchanged epoch under
            // the barrier means the file read is still the key's; else it is
            // read again there.
            let epochBefore = cache.epoch(stripe: stripe)
            let early = try existingFile(key, path: finalPath)
            let liveBefore = try locked(stripes[stripe], barrier: true) { () -> Bool in
                let old = cache.epoch(stripe: stripe) == epochBefore ? early : try existingFile(key, path: finalPath)
                let liveBefore: Bool
                if let condition {
                    // A condition needs the metadata: a damaged header fails the write.
                    let current = try old?.metadata.get()
                    let live = current.flatMap { $0.isExpired(nowNanos: Self.nowNanos()) ? nil : $0 }
                    try condition(live)
                    liveBefore = live != nil
                } else if case .success(let current)? = old?.metadata {
                    // A value that expired but is not swept yet was absent to every reader.
                    liveBefore = !current.isExpired(nowNanos: Self.nowNanos())
                } else {
                    liveBefore = old != nil && !expiries.hasExpired(key, nowNanos: Self.nowNanos())
                }
                try moveIntoPlace(tempPath: tempPath, fd: fd, finalPath: finalPath, key: key)
                cache.invalidate(key.bytes, stripe: stripe)
                index.set(key.bytes, metadata, stored: fileSize)
                // Under the barrier, so the index always holds the latest write's expiry.
                if let expires = metadata.expiresNanos {
                    noteExpiry(key, at: expires, version: metadata.version)
                } else {
                    expiries.forget(key, version: metadata.version)
                }
                changes?.storeDidChange(.put(metadata))
                let oldLogical = Int64((try? old?.metadata.get())?.size ?? 0)
                totals.add(keys: old == nil ? 1 : 0, logical: Int64(metadata.size) - oldLogical,
                           stored: fileSize - (old?.fileSize ?? 0))
                return liveBefore
            }
            return !liveBefore
        }
    }


    /// With fsync on: returns once everything the calling thread wrote is
    /// on disk (one flush shared with concurrent writers); a no-op without.
    func makeDurable() throws {
        try commit?.waitDurable()
    }

    /// The value file of `key` at `path` as a write or delete finds it:
    /// nil when there is none. Its metadata (expired or not) is what a
    /// condition is checked on; its sizes are what the totals take off.
    /// From the cache when it holds the key. Called under the key's stripe
    /// lock, or before it with the stripe's epoch read first (see `publish`).
    private func existingFile(_ key: StoreKey, path: String) throws -> ValueFileInfo? {
        if let entry = cache.lookup(key.bytes) {
            return ValueFileInfo(fileSize: Int64(entry.file.count), metadata: .success(entry.metadata))
        }
        return try ValueFileHeader.inspect(path: path)
    }

    /// rename(2), recovering when a reset or prefix delete moved the temp
    /// file or removed the target directory while the body was uploading:
    /// the value is then rebuilt from the still-open temp file descriptor.
    private func moveIntoPlace(tempPath: String, fd: Int32, finalPath: String, key: StoreKey) throws {
        if rename(tempPath, finalPath) == 0 { return }
        guard errno == ENOENT else { throw StoreError.posix("rename", tempPath) }
        try makeDirectories(root: valuesRoot, segments: key.segments.dropLast())
        if rename(tempPath, finalPath) == 0 { return }
        // Still ENOENT: the temp file itself is gone (moved to trash, or its
        // old generation is being deleted). Its descriptor still has it.
        guard errno == ENOENT else { throw StoreError.posix("rename", tempPath) }
        let directory = String(finalPath[..<finalPath.lastIndex(of: "/")!])
        let copyPath = directory + "/" + DiskNames.tempPrefix + DiskNames.hex(try nextVersion())
        let out = try POSIX.open(copyPath, O_WRONLY | O_CREAT | O_EXCL)
        defer { Glibc.close(out) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        var offset = 0
        while true {
            let n = try POSIX.pread(fd, buffer, at: offset, path: tempPath)
            if n == 0 { break }
            try POSIX.writeAll(out, UnsafeRawBufferPointer(rebasing: buffer[0..<n]), path: copyPath)
            offset += n
        }
        try makeDurable()
        if rename(copyPath, finalPath) != 0 { throw StoreError.posix("rename", copyPath) }
        logger.notice("value for \(key) was rebuilt after a concurrent delete moved its temp file")
    }

    // MARK: - Reads

    /// Opens the value of `key`; `.notFound` when absent or expired.
    public func open(_ key: StoreKey) throws -> StoredValue {
        // A cache hit needs no lock: an entry is dropped (under the key's
        // write barrier) before the write that replaces it is acknowledged,
        // so what the cache holds at the moment of the lookup is a value
        // the key had at that moment.
        let value: StoredValue
        if let entry = cache.lookup(key.bytes) {
            value = StoredValue(cached: entry, zlib: zlib)
        } else {
            let stripe = stripeIndex(for: key)
            let (fd, path, epoch) = try locked(rootQueue) { () -> (Int32, String, UInt64) in
                try locked(stripes[stripe]) { () -> (Int32, String, UInt64) in
                    // Read under the same lock as the open: a write after it
                    // bumps the epoch, and the insert below is then refused.
                    let epoch = cache.epoch(stripe: stripe)
                    let path = valuesRoot + "/" + DiskNames.relativePath(of: key)
                    let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
                    if fd < 0 {
                        if errno == ENOENT || errno == ENOTDIR || errno == EISDIR { throw StoreError.notFound }
                        throw StoreError.posix("open", path)
                    }
                    return (fd, path, epoch)
                }
            }
            value = try StoredValue(fd: fd, path: path, zlib: zlib)
            if cache.isEnabled, let entry = try value.cacheEntry() {
                cache.insert(key.bytes, entry, stripe: stripe, epoch: epoch)
            }
        }
        if value.metadata.isExpired(nowNanos: Self.nowNanos()) { throw StoreError.notFound }
        return value
    }

    // MARK: - Deletes

    /// Deletes one key if `condition` holds for its current value; returns
    /// whether it existed (an expired value counts as absent).
    public func delete(_ key: StoreKey, condition: WriteCondition? = nil) throws -> Bool {
        let outcome = try remove(key) { current in
            try condition?(current)
            return current != nil
        }
        return outcome.removed && outcome.wasLive
    }

    /// The sweep: removes `key` if its value expired (a rewrite since has
    /// its own expiry, or none, and stays).
    func removeIfExpired(_ key: StoreKey) throws {
        _ = try remove(key) { _ in false }
    }

    /// Unlinks `key`'s file under its barrier when `decide` (given the live
    /// metadata) says so, or when its value expired; the change is reported
    /// as a delete, or as an expiry for an expired value.
    private func remove(_ key: StoreKey, _ decide: (ValueMetadata?) throws -> Bool) throws -> (removed: Bool, wasLive: Bool) {
        var wasLive = false
        let (existed, root) = try locked(rootQueue) { () -> (Bool, String) in
            let path = valuesRoot + "/" + DiskNames.relativePath(of: key)
            let stripe = stripeIndex(for: key)
            let removed = try locked(stripes[stripe], barrier: true) { () -> Bool in
                let file = try existingFile(key, path: path)
                // A damaged file (no metadata) can still be deleted; it counts as a value.
                let meta = try? file?.metadata.get()
                let live = meta.flatMap { $0.isExpired(nowNanos: Self.nowNanos()) ? nil : $0 }
                let wanted = try decide(live)
                // An expired file goes too; to the client it was absent already.
                guard let file, wanted || live == nil else { return false }
                if unlink(path) != 0 {
                    if errno == ENOENT || errno == ENOTDIR || errno == EISDIR { return false }
                    throw StoreError.posix("unlink", path)
                }
                cache.invalidate(key.bytes, stripe: stripe)
                index.remove(key.bytes)
                totals.add(keys: -1, logical: -Int64(meta?.size ?? 0), stored: -file.fileSize)
                wasLive = live != nil || meta == nil
                changes?.storeDidChange(.delete(key.string, removed: meta?.version, version: try nextVersion(), expired: !wasLive))
                return true
            }
            return (removed, valuesRoot)
        }
        guard existed else { return (false, false) }
        let directories = DiskNames.relativeDirectories(key.segments.dropLast())
        if let commit {
            try commit.waitDurable()
            durability?.addWrite()
        }
        pruneEmptyDirectories(root: root, directories: directories)
        return (true, wasLive)
    }

    /// Removes now-empty directories from the deepest up. A writer that
    /// loses its directory this way recreates it (see `createTempFile`).
    private func pruneEmptyDirectories(root: String, directories: [String]) {
        var dirs = directories
        while !dirs.isEmpty {
            if rmdir(([root] + dirs).joined(separator: "/")) != 0 { return }
            dirs.removeLast()
        }
    }

    /// `DELETE /store/`: points `values` at a fresh generation in one rename
    /// and deletes the old one in the background, so it takes the same time
    /// for ten keys or ten million. A crash before the rename keeps the old
    /// state, after it the new one; leftovers go at the next start.
    public func deleteAll() throws -> Int {
        let (deleted, oldRoot) = try locked(rootQueue, barrier: true) { () -> (Int, String) in
            let newest = Self.generations(dataDirectory).map(\.number).max() ?? generation
            let next = try Self.switchGeneration(dataDirectory, after: max(newest, generation), fsync: options.fsync)
            let old = valuesRoot
            cache.invalidateAll()
            generation = next
            valuesRoot = dataDirectory + "/gen-\(next)"
            // Until the start-up scan is done the totals lack what it has
            // not reached: the old generation's values are counted instead
            // (a directory walk, no file opens; only in that window).
            let counted = totals.reset()
            let deleted = index.isReady ? counted : countValues(in: old)
            index.reset()
            changes?.storeDidChange(.deletePrefix("", deleted: deleted, version: try nextVersion()))
            return (deleted, old)
        }
        reaper.async { POSIX.removeTree(oldRoot) }
        return deleted
    }

    /// `DELETE /store/<prefix>/`: moves the prefix's directory to trash in
    /// one rename, counts what it held, and deletes it in the background.
    public func deletePrefix(_ prefix: StorePrefix) throws -> Int {
        if prefix.segments.isEmpty { return try deleteAll() }
        let trashDirectory = dataDirectory + "/trash"
        let trashPath = trashDirectory + "/" + DiskNames.hex(try nextVersion())
        // The count is taken under the barrier so that the change event goes
        // out before any later write under the prefix can report its own.
        let moved = try locked(rootQueue, barrier: true) { () -> (root: String, generation: Int, deleted: Int, indexed: Bool)? in
            let directory = valuesRoot + "/" + DiskNames.relativePath(of: prefix)
            guard let st = try POSIX.lstatIfExists(directory), POSIX.isDirectory(st) else { return nil }
            if mkdir(trashDirectory, 0o755) != 0 && errno != EEXIST { throw StoreError.posix("mkdir", trashDirectory) }
            if rename(directory, trashPath) != 0 { throw StoreError.posix("rename", directory) }
            cache.invalidateAll()
            let deleted = countValues(in: trashPath)
            // A complete index knows the bytes; during the start-up scan they
            // are measured in the background (below).
            let indexed = index.isReady
            let bytes = index.removePrefix(Array(prefix.string.utf8))
            totals.add(keys: -deleted, logical: indexed ? -bytes.logical : 0, stored: indexed ? -bytes.stored : 0)
            changes?.storeDidChange(.deletePrefix(prefix.string, deleted: deleted, version: try nextVersion()))
            return (valuesRoot, generation, deleted, indexed)
        }
        guard let (root, generation, deleted, indexed) = moved else { return 0 }
        // The rename is durable before the answer and before its files go,
        // but flushed outside the barrier: the rest of the store is not held
        // up by the flush, and the index, the totals and the change event
        // already say what the disk says. If the flush fails, the answer is
        // an error and the trash waits for the next start to be removed.
        try makeDurable()
        if indexed {
            reaper.async { POSIX.removeTree(trashPath) }
            pruneEmptyDirectories(root: root, directories: DiskNames.relativeDirectories(prefix.segments.dropLast()))
            return deleted
        }
        // Their bytes are measured in the background, before the trash goes
        // (it reads every header, which the barrier should not wait for, nor
        // the client): until then the byte totals lag behind the key count.
        // Nothing writes into the trash. A reset since then emptied the
        // totals already: checked under the root queue, which a reset holds
        // exclusively while it swaps generations.
        reaper.async { [self] in
            let bytes = measureValues(in: trashPath)
            rootQueue.sync {
                // The end of the start-up scan set the totals from the index
                // (without these values) if it came first.
                if self.generation == generation && !index.isReady {
                    totals.add(keys: 0, logical: -bytes.logical, stored: -bytes.stored)
                }
            }
            POSIX.removeTree(trashPath)
        }
        pruneEmptyDirectories(root: root, directories: DiskNames.relativeDirectories(prefix.segments.dropLast()))
        return deleted
    }

    private func countValues(in path: String) -> Int {
        var n = 0
        try? ValueTreeWalker.walk(path) { if case .value = $0 { n += 1 }; return true }
        return n
    }

    /// The decompressed and on-disk bytes of the values below `path`
    /// (counted the way the start-up scan counts them).
    private func measureValues(in path: String) -> (logical: Int64, stored: Int64) {
        var logical: Int64 = 0, stored: Int64 = 0
        try? ValueTreeWalker.walk(path) { item in
            guard case .value(let file) = item, let info = try? ValueFileHeader.inspect(path: file) else { return true }
            stored += info.fileSize
            if case .success(let meta) = info.metadata { logical += Int64(meta.size) }
            return true
        }
        return (logical, stored)
    }

    // MARK: - Read-modify-write

    /// Thrown inside `update` when another write got in between; it retries.
    private struct UpdateRace: Error {}

    public func update(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int,
                       _ transform: (ValueMetadata?, [UInt8]?) throws -> UpdatedValue) throws -> PutOutcome {
        // Optimistic: read a snapshot, build the new value with no lock held,
        // publish only if the key still has the version that was read.
        for _ in 0..<10_000 {
            var current: ValueMetadata? = nil
            var bytes: [UInt8]? = nil
            do {
                let value = try open(key)
                defer { value.close() }
                guard value.metadata.size <= UInt64(maxValueBytes) else { throw StoreError.tooLarge(limit: Int64(maxValueBytes)) }
                current = value.metadata
                bytes = try value.readAll()
            } catch StoreError.notFound {}
            try condition?(current)
            let updated = try transform(current, bytes)
            guard updated.bytes.count <= maxValueBytes else { throw StoreError.tooLarge(limit: Int64(maxValueBytes)) }
            let expected = current?.version
            let upload = try makeUpload(key: key, contentType: updated.contentType, encoding: .identity,
                                        expiresNanos: current?.expiresNanos) { meta in
                guard meta?.version == expected else { throw UpdateRace() }
                try condition?(meta)
            }
            do {
                try updated.bytes.withUnsafeBytes { try upload.write($0) }
                return try upload.finish()
            } catch is UpdateRace {
                continue
            }
        }
        throw StoreError.contention(key: key.string)
    }

    public func makeUniqueID() throws -> String { DiskNames.hex(try nextVersion()) }

    // MARK: - Listing

    /// Keys under `prefix` in byte order, after `after`, at most `limit`
    /// entries (keys and, with `groupByDirectory`, common prefixes).
    /// From the key index once the start-up scan is done, by walking the
    /// directories before.
    public func list(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool) throws -> StoreListing {
        if index.isReady {
            return index.list(prefix: Array(prefix.string.utf8), after: after.map { Array($0.utf8) }, limit: limit,
                              groupByDirectory: groupByDirectory, nowNanos: Self.nowNanos())
        }
        return try listDirectories(prefix: prefix, after: after, limit: limit, groupByDirectory: groupByDirectory)
    }

    /// The listing by walking the directories and opening each value file.
    func listDirectories(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool,
                         nowNanos: Int64 = DiskStore.nowNanos()) throws -> StoreListing {
        let root = currentRoot()
        var lister = DirectoryLister(after: after.map { Array($0.utf8) }, limit: limit,
                                     groupByDirectory: groupByDirectory, nowNanos: nowNanos, logger: logger)
        let directory = prefix.segments.isEmpty ? root : root + "/" + DiskNames.relativePath(of: prefix)
        try lister.walk(directory, keyPrefix: Array(prefix.string.utf8))
        return lister.finish()
    }

    // MARK: - Health

    /// Writes, reads back and removes a probe file next to the values.
    public func checkHealth() throws {
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
