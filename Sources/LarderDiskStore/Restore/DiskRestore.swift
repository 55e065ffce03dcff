import LarderStorage
import LarderValueFile
import Dispatch
import FoundationEssentials
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// An all-or-nothing restore on the disk store (`RestoreTransaction`).
///
/// Each value is written as a finished value file into a staging tree,
/// `<data>/restore/<id>/tree/`, laid out as the values directory is (the
/// same relative path for the same key), where no reader, listing, index or
/// change feed looks. `commit` then:
/// 1. makes the staged files durable (one group-commit flush);
/// 2. writes the intent, `<data>/restore/<id>/intent` (`RestoreIntent`),
///    and makes it durable: the commit point;
/// 3. publishes under the root barrier (`DiskStore.publishRestore`): with
///    `replace`, the prefix's directory goes to trash and the staged one
///    takes its place in two renames (for the whole store, the staged tree
///    becomes the next generation); without, each staged file is renamed
///    over its key's. The index, totals, cache and change feed change in
///    the same barrier, so a reader sees the old set or the new one;
/// 4. makes the renames durable, removes the restore directory, answers.
///
/// A crash before 2 leaves no intent: start-up removes the staging
/// directory (the old set stays). A crash after 2 is rolled forward at
/// start-up (`DiskStore.recoverRestores`), before anything is served: the
/// steps of 3 are idempotent. A failure before 2 (a full disk while
/// staging) removes the staging directory and changes nothing.
///
/// Used by one thread at a time (`RestoreTransaction`); `commit` hands it
/// to the flush callbacks, each of which starts after the one before.
final class DiskRestore: RestoreTransaction, UploadDestination, @unchecked Sendable {
    /// As the store's own uploads (`DiskStore.storesSmallValuesUncompressed`).
    var storesSmallValuesUncompressed: Bool { true }
    let prefix: StorePrefix
    let replace: Bool
    private let store: DiskStore
    /// `<data>/restore/<id>`.
    let directory: String
    /// `directory/tree`: the staged values, at their keys' relative paths.
    let tree: String
    /// The staged values, one per key (the last staged wins), in the order
    /// they were first staged.
    private(set) var staged: [StagedValue] = []
    /// Where each key's value is in `staged`, by the key's bytes (not its
    /// `String`, whose equality folds canonically equivalent keys).
    private var position: [[UInt8]: Int] = [:]
    private var spent = false

    struct StagedValue {
        let key: StoreKey
        var metadata: ValueMetadata
        var fileSize: Int64
    }

    init(store: DiskStore, prefix: StorePrefix, replace: Bool) throws {
        self.store = store
        self.prefix = prefix
        self.replace = replace
        let parent = store.dataDirectory + "/" + DiskStore.restoreDirectoryName
        if mkdir(parent, 0o755) != 0 && errno != EEXIST { throw StoreError.posix("mkdir", parent) }
        directory = parent + "/" + DiskNames.hex(try store.nextVersion())
        tree = directory + "/tree"
        if mkdir(directory, 0o755) != 0 { throw StoreError.posix("mkdir", directory) }
        if mkdir(tree, 0o755) != 0 { throw StoreError.posix("mkdir", tree) }
        // With replace, the prefix's staged directory exists even when no
        // value is restored: publishing it is what clears the prefix.
        if replace && !prefix.segments.isEmpty {
            try store.makeDirectories(root: tree, segments: prefix.segments[...])
        }
    }

    deinit { if !spent { POSIX.removeTree(directory) } }

    // MARK: - Staging

    func stage(key: StoreKey, contentType: String, expiresNanos: Int64?) throws -> ValueWriter {
        precondition(!spent, "the restore was committed or aborted")
        // Publishing moves the prefix's directory: a key elsewhere would be
        // staged and never published.
        guard key.segments.count > prefix.segments.count, key.segments.starts(with: prefix.segments) else {
            throw StoreError.invalidKey("\(key) is not under the restore's prefix '\(prefix)'")
        }
        try ValueMetadata.checkContentType(contentType)
        let name = DiskNames.tempPrefix + DiskNames.hex(try store.nextVersion())
        let path = tree + "/" + DiskNames.relativeDirectory(of: key) + name
        let fd: Int32
        do {
            fd = try POSIX.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC)
        } catch StoreError.io(_, _, let code) where code == ENOENT {
            try store.makeDirectories(root: tree, segments: key.segments.dropLast())
            fd = try POSIX.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC)
        }
        let meta = ValueMetadata(key: key.string, contentType: contentType, size: 0, version: 0,
                                 modifiedNanos: 0, expiresNanos: expiresNanos)
        return try ValueUpload(destination: self, key: key, metadata: meta, encoding: .identity, tempPath: path, fd: fd,
                               maxSize: store.options.maxValueSize, condition: nil)
    }

    var zlib: ZlibPool { store.zlib }
    var compressionModes: CompressionModeCounts? { store.compressionModes }
    func nextVersion() throws -> UInt64 { try store.nextVersion() }

    /// A staged value is complete: its file takes its key's place in the
    /// staging tree. Nothing is published.
    func finishUpload(_ upload: ValueUpload) -> StoreReply<PutOutcome> {
        .catching {
            defer { upload.abort() }
            try upload.complete()
            let final = tree + "/" + DiskNames.relativePath(of: upload.key)
            if rename(upload.tempPath, final) != 0 { throw StoreError.posix("rename", upload.tempPath) }
            let value = StagedValue(key: upload.key, metadata: upload.metadata, fileSize: upload.written)
            if let at = position[upload.key.bytes] {
                staged[at] = value
            } else {
                position[upload.key.bytes] = staged.count
                staged.append(value)
            }
            return upload.succeeded(created: true)
        }
    }

    // MARK: - Commit

    func commit() -> StoreReply<Int> {
        precondition(!spent, "the restore was committed or aborted")
        spent = true
        position = [:]
        return .later { pending in
            // Off the caller's thread: each step is file I/O or a wait.
            self.afterDurable { error in
                if let error { return self.failBeforeIntent(error, pending) }
                let intent: RestoreIntent
                do {
                    intent = try self.store.writeRestoreIntent(for: self)
                } catch {
                    return self.failBeforeIntent(error, pending)
                }
                self.afterDurable { error in
                    if let error { return self.failBeforeIntent(error, pending) }
                    // Committed: from here on the restore is rolled forward,
                    // now or, should this fail or the process die, at start-up.
                    let trash: String?
                    do {
                        trash = try self.store.publishRestore(self, intent: intent)
                    } catch {
                        self.store.logger.error("a committed restore under '\(self.prefix)' failed to publish: \(error); it is completed when the store opens next")
                        return pending.fulfil(.failure(error))
                    }
                    self.afterDurable { error in
                        if let error { return pending.fulfil(.failure(error)) }
                        // The old values go once their directory's rename is on disk.
                        self.store.reaper.async {
                            if let trash { POSIX.removeTree(trash) }
                            POSIX.removeTree(self.directory)
                        }
                        pending.fulfil(.success(self.staged.count))
                    }
                }
            }
        }
    }

    /// Runs `next` once what was written so far is durable (at once, on
    /// another thread, without fsync).
    private func afterDurable(_ next: @escaping @Sendable ((any Error)?) -> Void) {
        guard let commit = store.commit else { return DispatchQueue.global().async { next(nil) } }
        // The committer's queue must stay free for flushing.
        commit.afterDurable { error in DispatchQueue.global().async { next(error) } }
    }

    private func failBeforeIntent(_ error: any Error, _ pending: StorePending<Int>) {
        POSIX.removeTree(directory)
        pending.fulfil(.failure(error))
    }

    func abort() {
        guard !spent else { return }
        spent = true
        staged = []
        position = [:]
        POSIX.removeTree(directory)
    }
}

extension DiskStore {
    /// `<data>/restore`: one directory per restore being staged or published.
    static let restoreDirectoryName = "restore"

    public func beginRestore(under prefix: StorePrefix, replace: Bool) throws -> any RestoreTransaction {
        try DiskRestore(store: self, prefix: prefix, replace: replace)
    }
}
