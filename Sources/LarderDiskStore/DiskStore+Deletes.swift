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

/// Deletes of one key, of a prefix, and of everything (a reset).
extension DiskStore {
    // MARK: - Deletes

    /// Deletes one key if `condition` holds for its current value; returns
    /// whether it existed (an expired value counts as absent).
    ///
    /// With fsync on, the file is unlinked now and the answer comes once a
    /// flush has made that durable, without holding the caller's thread
    /// while it runs (a connection's event loop serves others meanwhile),
    /// as a PUT's does (`finishUpload`).
    public func delete(_ key: StoreKey, condition: WriteCondition? = nil) -> StoreReply<Bool> {
        guard let commit else { return .catching { try deleteValue(key, condition: condition) } }
        let unlinked: UnlinkedValue?
        do {
            unlinked = try unlinkValue(key) { current in
                try condition?(current)
                return current != nil
            }
        } catch {
            return .now(.failure(error))
        }
        guard let unlinked else { return .now(.success(false)) }
        return .later { pending in
            commit.afterDurable { error in
                if let error { return pending.fulfil(.failure(error)) }
                self.durability?.addWrite()
                // The committer's queue must stay free for flushing: the
                // directories' removal (I/O) runs elsewhere, before the
                // answer, so that a listing after it shows none of them.
                DispatchQueue.global().async {
                    self.pruneEmptyDirectories(root: unlinked.root, directories: unlinked.directories)
                    pending.fulfil(.success(unlinked.wasLive))
                }
            }
        }
    }

    /// `delete`, on the caller's thread.
    package func deleteValue(_ key: StoreKey, condition: WriteCondition? = nil) throws -> Bool {
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
    func remove(_ key: StoreKey, _ decide: (ValueMetadata?) throws -> Bool) throws -> (removed: Bool, wasLive: Bool) {
        guard let unlinked = try unlinkValue(key, decide) else { return (false, false) }
        if let commit {
            try commit.waitDurable()
            durability?.addWrite()
        }
        pruneEmptyDirectories(root: unlinked.root, directories: unlinked.directories)
        return (true, unlinked.wasLive)
    }

    /// A value file `unlinkValue` removed: where its directories are, for
    /// removing those left empty, and whether the value was live.
    struct UnlinkedValue: Sendable {
        let root: String
        let directories: [String]
        let wasLive: Bool
    }

    /// `remove`'s part under the key's barrier: the unlink and everything
    /// that changes with it; nil when nothing was removed. Not durable yet.
    func unlinkValue(_ key: StoreKey, _ decide: (ValueMetadata?) throws -> Bool) throws -> UnlinkedValue? {
        var wasLive = false
        let (existed, root) = try locked(rootQueue) { () -> (Bool, String) in
            let path = valuesRoot + "/" + DiskNames.relativePath(of: key)
            let stripe = stripeIndex(for: key)
            let removed = try locked(stripes[stripe], barrier: true) { () -> Bool in
                let file = try existingFile(key, path: path)
                // A damaged file (no metadata) can still be deleted; it counts as a value.
                let meta = try? file?.metadata.get()
                let live = meta.flatMap { $0.isExpired(now: nowNanos()) ? nil : $0 }
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
        guard existed else { return nil }
        return UnlinkedValue(root: root, directories: DiskNames.relativeDirectories(key.segments.dropLast()), wasLive: wasLive)
    }

    /// Removes now-empty directories from the deepest up. A writer that
    /// loses its directory this way recreates it (see `createTempFile`).
    func pruneEmptyDirectories(root: String, directories: [String]) {
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
    public func deletePrefix(_ prefix: StorePrefix) -> StoreReply<Int> {
        .catching { try deleteValues(under: prefix) }
    }

    /// `deletePrefix`, on the caller's thread.
    package func deleteValues(under prefix: StorePrefix) throws -> Int {
        if prefix.segments.isEmpty { return try deleteAll() }
        // The count is taken under the barrier so that the change event goes
        // out before any later write under the prefix can report its own.
        let moved = try locked(rootQueue, barrier: true) { () -> (root: String, generation: Int, deleted: Int, indexed: Bool, trash: String)? in
            let directory = valuesRoot + "/" + DiskNames.relativePath(of: prefix)
            guard let st = try POSIX.lstatIfExists(directory), POSIX.isDirectory(st) else { return nil }
            let trashPath = try moveToTrash(directory)
            cache.invalidateAll()
            let deleted = countValues(in: trashPath)
            // A complete index knows the bytes; during the start-up scan they
            // are measured in the background (below).
            let indexed = index.isReady
            let bytes = index.removePrefix(Array(prefix.string.utf8))
            totals.add(keys: -deleted, logical: indexed ? -bytes.logical : 0, stored: indexed ? -bytes.stored : 0)
            changes?.storeDidChange(.deletePrefix(prefix.string, deleted: deleted, version: try nextVersion()))
            return (valuesRoot, generation, deleted, indexed, trashPath)
        }
        guard let (root, generation, deleted, indexed, trashPath) = moved else { return 0 }
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

    /// `<data>/trash`: directories of deleted values, removed in the background.
    static let trashName = "trash"

    /// Moves the directory at `path` into the trash in one rename; returns
    /// where it went. (Under the root barrier.)
    func moveToTrash(_ path: String) throws -> String {
        let trashDirectory = dataDirectory + "/" + Self.trashName
        if mkdir(trashDirectory, 0o755) != 0 && errno != EEXIST { throw StoreError.posix("mkdir", trashDirectory) }
        let trashPath = trashDirectory + "/" + DiskNames.hex(try nextVersion())
        if rename(path, trashPath) != 0 { throw StoreError.posix("rename", path) }
        return trashPath
    }

    func countValues(in path: String) -> Int {
        var n = 0
        _ = try? ValueTreeWalker.walk(path) { if case .value = $0 { n += 1 }; return true }
        return n
    }

    /// The decompressed and on-disk bytes of the values below `path`
    /// (counted the way the start-up scan counts them).
    func measureValues(in path: String) -> (logical: Int64, stored: Int64) {
        var logical: Int64 = 0, stored: Int64 = 0
        _ = try? ValueTreeWalker.walk(path) { item in
            guard case .value(let file) = item, let info = try? ValueFileHeader.inspect(path: file) else { return true }
            stored += info.fileSize
            if case .success(let meta) = info.metadata { logical += Int64(meta.size) }
            return true
        }
        return (logical, stored)
    }
}
