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

/// Opening the data directory: generations, leftovers of interrupted
/// deletes, and the start-up scan that fills the key index in the background.
extension DiskStore {
    // MARK: - Start-up

    static func absolute(_ path: String) -> String {
        var p = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
        return p
    }

    /// Reads `values -> gen-N`, creating the first generation on a new directory.
    static func openGeneration(_ data: String, fsync: Bool) throws -> (Int, String) {
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
    static func generations(_ data: String) -> [(number: Int, path: String)] {
        (try? POSIX.directoryEntries(data))??.compactMap { entry in
            let name = String(decoding: entry.name, as: UTF8.self)
            guard entry.isDirectory, name.hasPrefix("gen-"), let n = Int(name.dropFirst(4)) else { return nil }
            return (n, data + "/" + name)
        } ?? []
    }

    /// Creates a new, empty `gen-N` with N above `after` and every existing
    /// one (a leftover may still be queued for deletion), then points
    /// `values` at it in one rename. Returns N.
    static func switchGeneration(_ data: String, after: Int, fsync: Bool) throws -> Int {
        var number = after + 1
        while mkdir(data + "/gen-\(number)", 0o755) != 0 {
            guard errno == EEXIST else { throw StoreError.posix("mkdir", data + "/gen-\(number)") }
            number += 1
        }
        try pointValues(data, at: number, fsync: fsync)
        return number
    }

    /// Points `values` at `gen-<number>` in one rename of a new link.
    static func pointValues(_ data: String, at number: Int, fsync: Bool) throws {
        let staging = data + "/values.new"
        unlink(staging)
        if symlink("gen-\(number)", staging) != 0 { throw StoreError.posix("symlink", staging) }
        if fsync { try POSIX.fsyncDirectory(data) }
        if rename(staging, data + "/values") != 0 { throw StoreError.posix("rename", staging) }
        if fsync { try POSIX.fsyncDirectory(data) }
    }

    /// Old generations and trash from a reset or prefix delete that a crash
    /// interrupted: nothing points at them, so they go in the background.
    func removeLeftovers() {
        guard let entries = try? POSIX.directoryEntries(dataDirectory) else { return }
        let current = "gen-\(generation)"
        var doomed: [String] = []
        for entry in entries {
            let name = String(decoding: entry.name, as: UTF8.self)
            if name == "values.new" { unlink(dataDirectory + "/" + name) }
            if entry.isDirectory && name == Self.trashName {
                // Renamed out of the way first: this run's deletes make a
                // `trash` of their own, which the background removal of the
                // old one must not pull from under them.
                let aside = dataDirectory + "/" + Self.trashName + "-" + String(DispatchTime.now().uptimeNanoseconds, radix: 16)
                if rename(dataDirectory + "/" + name, aside) == 0 { doomed.append(aside) }
            } else if entry.isDirectory && ((name.hasPrefix("gen-") && name != current) || name.hasPrefix(Self.trashName + "-")) {
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
    func scanValues(generation scanGeneration: Int, root: String, tempCutoff: UInt64, attempt: Int = 0) {
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
            if attempt == 0 { logger.error("\(message)") } else { logger.debug("\(message)") }
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
        logger.notice("start-up scan: \(values) values in \(ms) ms\(finished ? "" : " (a reset came first)")")
        logger.info("""
            store \(dataDirectory): \(stats.keys) values (\(stats.logicalBytes) bytes, \(stats.storedBytes) on disk, \
            \(expiring) with an expiry), \(temps) stale temp files removed, index \(index.approximateBytes) bytes
            """)
        if damaged > 0 { logger.warning("store \(dataDirectory): \(damaged) value files have an unreadable header") }
    }

    /// Whether the start-up scan is done (listings use the key index, the
    /// totals are exact).
    public var isIndexReady: Bool { index.isReady }

    /// Waits for the start-up scan (tests, tools).
    public func waitForIndex() { scanQueue.sync {} }
}
