import LarderStorage
import LarderValueFile
import Dispatch
import FoundationEssentials
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// Publishing a committed restore (`DiskRestore`), and finishing one that a
/// crash interrupted. Every step is idempotent, so that start-up can run
/// the same steps again over whatever a crash left: a staged file already
/// moved is no longer in the staging tree; a prefix directory already
/// swapped leaves no staged directory behind.
extension DiskStore {
    /// Chooses what the intent must say (for a replace of everything, the
    /// generation the staged tree becomes) and writes it; durable once the
    /// next flush is.
    func writeRestoreIntent(for restore: DiskRestore) throws -> RestoreIntent {
        var intent = RestoreIntent(replace: restore.replace, prefix: restore.prefix.string)
        if restore.replace && restore.prefix.segments.isEmpty {
            intent.generation = try locked(rootQueue) {
                (Self.generations(dataDirectory).map(\.number).max() ?? generation) + 1
            }
        }
        try intent.write(into: restore.directory, fsync: options.fsync)
        return intent
    }

    /// Step 3 of a restore's commit: everything staged becomes current in
    /// one hold of the root barrier, with the index, totals, cache, expiry
    /// and change feed. Returns the directory the old values went to (with
    /// `replace`), to remove once the renames are durable.
    @discardableResult
    func publishRestore(_ restore: DiskRestore, intent: RestoreIntent) throws -> String? {
        try locked(rootQueue, barrier: true) { () -> String? in
            // Never into a directory whose lock this process let go of.
            guard lock != nil else { throw StoreError.posix("restore", restore.directory, ECANCELED) }
            let prefix = restore.prefix
            var trash: String? = nil
            if intent.replace {
                let deleted: Int
                if let number = intent.generation {
                    let old = valuesRoot
                    try Self.adoptGeneration(dataDirectory, tree: restore.tree, number: number, fsync: options.fsync)
                    generation = number
                    valuesRoot = dataDirectory + "/gen-\(number)"
                    let counted = totals.reset()
                    deleted = index.isReady ? counted : countValues(in: old)
                    index.reset()
                    trash = old
                } else {
                    let indexed = index.isReady
                    trash = try swapPrefixDirectory(prefix, staged: restore.tree)
                    deleted = trash.map(countValues(in:)) ?? 0
                    let bytes = index.removePrefix(Array(prefix.string.utf8))
                    totals.add(keys: -deleted, logical: indexed ? -bytes.logical : 0, stored: indexed ? -bytes.stored : 0)
                }
                cache.invalidateAll()
                changes?.storeDidChange(.deletePrefix(prefix.string, deleted: deleted, version: try nextVersion()))
                for value in restore.staged {
                    noteRestored(value, replacing: nil)
                }
            } else {
                for value in restore.staged {
                    let final = valuesRoot + "/" + DiskNames.relativePath(of: value.key)
                    let old = try replacedValue(value.key, path: final)
                    try moveStaged(restore.tree + "/" + DiskNames.relativePath(of: value.key), to: final, key: value.key)
                    cache.invalidate(value.key.bytes, stripe: stripeIndex(for: value.key))
                    noteRestored(value, replacing: old)
                }
            }
            return trash
        }
    }

    /// The index, totals, expiry and change feed learn of one restored value
    /// (under the root barrier). `old`: the sizes of the value it replaced.
    private func noteRestored(_ value: DiskRestore.StagedValue, replacing old: (logical: Int64, stored: Int64)?) {
        let meta = value.metadata
        index.set(value.key.bytes, meta, stored: value.fileSize)
        totals.add(keys: old == nil ? 1 : 0, logical: Int64(meta.size) - (old?.logical ?? 0),
                   stored: value.fileSize - (old?.stored ?? 0))
        if let expires = meta.expiresNanos {
            noteExpiry(value.key, at: expires, version: meta.version)
        } else {
            expiries.forget(value.key, version: meta.version)
        }
        changes?.storeDidChange(.put(meta))
    }

    /// The sizes of `key`'s current value, from the index once it is
    /// complete, else from its file; nil when there is none.
    private func replacedValue(_ key: StoreKey, path: String) throws -> (logical: Int64, stored: Int64)? {
        if index.isReady {
            return index.replaced(key.bytes).map { (Int64($0.size), $0.stored) }
        }
        guard let file = try existingFile(key, path: path) else { return nil }
        return (Int64((try? file.metadata.get())?.size ?? 0), file.fileSize)
    }

    /// Renames a staged file over its key's, making the key's directories
    /// when they are missing. A staged file already gone was moved by an
    /// earlier, interrupted run of the same step.
    private func moveStaged(_ staged: String, to final: String, key: StoreKey) throws {
        if POSIX.renamePath(staged, final) == 0 { return }
        guard errno == ENOENT else { throw StoreError.posix("rename", staged) }
        guard try POSIX.lstatIfExists(staged) != nil else { return }
        try makeDirectories(root: valuesRoot, segments: key.segments.dropLast())
        if POSIX.renamePath(staged, final) != 0 { throw StoreError.posix("rename", staged) }
    }

    /// Replace of a prefix: the prefix's directory goes to trash and the
    /// staged one takes its place. Returns the trash path (nil: the prefix
    /// had no directory). Done already when the staged directory is gone.
    private func swapPrefixDirectory(_ prefix: StorePrefix, staged tree: String) throws -> String? {
        let relative = DiskNames.relativePath(of: prefix)
        let staged = tree + "/" + relative
        let live = valuesRoot + "/" + relative
        guard try POSIX.lstatIfExists(staged) != nil else { return nil }
        var trash: String? = nil
        if let st = try POSIX.lstatIfExists(live), POSIX.isDirectory(st) {
            trash = try moveToTrash(live)
        } else {
            try makeDirectories(root: valuesRoot, segments: prefix.segments.dropLast())
        }
        if rename(staged, live) != 0 { throw StoreError.posix("rename", staged) }
        return trash
    }

    /// Replace of everything: the staged tree becomes `gen-<number>` and
    /// `values` points at it. Either rename may have happened already.
    static func adoptGeneration(_ data: String, tree: String, number: Int, fsync: Bool) throws {
        let target = data + "/gen-\(number)"
        if try POSIX.lstatIfExists(tree) != nil {
            if rename(tree, target) != 0 { throw StoreError.posix("rename", tree) }
        }
        guard try POSIX.lstatIfExists(target) != nil else { return }
        try pointValues(data, at: number, fsync: fsync)
    }

    // MARK: - Start-up

    /// Before anything is served (and before leftovers are removed): every
    /// restore that reached its intent is finished, every other one is
    /// dropped. Returns how many were finished. Throws when one cannot be
    /// finished: the store must not open on a half-published restore.
    func recoverRestores() throws -> Int {
        let parent = dataDirectory + "/" + Self.restoreDirectoryName
        guard let entries = try POSIX.directoryEntries(parent) else { return 0 }
        var finished = 0
        // In the order they were begun (hex ids of increasing versions).
        for entry in entries.filter(\.isDirectory).sorted(by: { $0.name.lexicographicallyPrecedes($1.name) }) {
            let directory = parent + "/" + String(decoding: entry.name, as: UTF8.self)
            guard let intent = try RestoreIntent.read(from: directory) else {
                logger.notice("dropping a restore that did not reach its commit point: \(directory)")
                POSIX.removeTree(directory)
                continue
            }
            try rollForward(intent, tree: directory + "/tree")
            if options.fsync { try POSIX.fsyncDirectory(dataDirectory) }
            POSIX.removeTree(directory)
            logger.notice("finished a restore under '\(intent.prefix)' that a stop interrupted")
            finished += 1
        }
        return finished
    }

    /// Publishes a committed restore's files as `publishRestore` does, with
    /// no index to tell yet (the start-up scan reads what this leaves).
    private func rollForward(_ intent: RestoreIntent, tree: String) throws {
        let prefix = try intent.storePrefix()
        if intent.replace {
            if let number = intent.generation {
                try Self.adoptGeneration(dataDirectory, tree: tree, number: number, fsync: options.fsync)
                (generation, valuesRoot) = (number, dataDirectory + "/gen-\(number)")
            } else if let old = try swapPrefixDirectory(prefix, staged: tree) {
                POSIX.removeTree(old)
            }
        } else {
            var files: [String] = []
            try ValueTreeWalker.walk(tree, strict: true) { found in
                if case .value(let path) = found { files.append(path) }
                return true
            }
            for path in files {
                guard case .success(let meta)? = try ValueFileHeader.inspect(path: path)?.metadata,
                      let key = try? StoreKey(meta.key) else {
                    throw StoreError.corrupt(path: path, reason: "a staged value of a committed restore cannot be read")
                }
                try moveStaged(path, to: valuesRoot + "/" + DiskNames.relativePath(of: key), key: key)
            }
        }
        if options.fsync { try commit?.waitDurable() }
    }
}
