import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// A snapshot restore on PostgreSQL (`RestoreTransaction`): values are
/// encoded as any PUT's (`ValueUpload`, made by the store) and staged in a
/// spool file (`RestoreSpool`), which nobody else reads and the database
/// never sees; `commit` writes them all in one transaction
/// (`PostgresStore.commitRestore`). Until it commits nothing is visible,
/// and whatever ends it early (an abort, an error, a lost connection, the
/// process's end) leaves the database as it was.
///
/// It is the uploads' destination while staging: an upload's `finish`
/// stages it and answers at once.
///
/// Used by one thread at a time (the protocol's terms); `@unchecked
/// Sendable` only because `UploadDestination` asks it of every
/// destination, for stores whose uploads publish from other threads.
final class PostgresRestore: RestoreTransaction, UploadDestination, @unchecked Sendable {
    let prefix: StorePrefix
    private let replace: Bool
    private let store: PostgresStore
    /// nil once the restore is spent (committed or aborted).
    private var spool: RestoreSpool?

    init(store: PostgresStore, prefix: StorePrefix, replace: Bool) throws {
        self.store = store
        self.prefix = prefix
        self.replace = replace
        spool = try RestoreSpool(directory: store.options.spoolDirectory)
    }

    deinit { spool?.close() }

    // MARK: - Staging

    func stage(key: StoreKey, contentType: String, expiresNanos: Int64?) throws -> ValueWriter {
        guard spool != nil else { throw Self.spent }
        // The caller checks it; a key outside the prefix would escape a `replace`'s delete.
        guard key.string.utf8.starts(with: prefix.string.utf8) else {
            throw StoreError.invalidKey("\(key.string) is not under the restore's prefix \(prefix.string)")
        }
        return try store.makeUpload(key: key, contentType: contentType, encoding: .identity, expiresNanos: expiresNanos,
                                    condition: nil, destination: self)
    }

    var zlib: ZlibPool { store.zlib }
    /// The store's: the value was compressed, whether or not the restore commits.
    var compressionModes: CompressionModeCounts? { store.compressionModes }
    /// The commit assigns versions (`RestoreVersions`) and stamps them.
    func nextVersion() throws -> UInt64 { 0 }

    /// Stages a finished upload: its file goes into the spool, and the
    /// upload (its memory, its own spool file) is let go. The outcome's
    /// metadata has no version yet; `created` means nothing before the commit.
    func finishUpload(_ upload: ValueUpload) -> StoreReply<PutOutcome> {
        if let failed = upload.completeOrFail() { return failed }
        defer { upload.abort() }
        do {
            guard let spool else { throw Self.spent }
            try spool.append(upload) { offset, count in try store.bytes(of: upload, at: offset, count: count) }
            return .now(.success(upload.succeeded(created: true)))
        } catch {
            return .now(.failure(error))
        }
    }

    // MARK: - Ending

    /// Hands the spool to the commit's task, which drops it however it
    /// ends. A restore with nothing to write answers now.
    func commit() -> StoreReply<Int> {
        guard let spool else { return .now(.failure(Self.spent)) }
        self.spool = nil
        guard replace || !spool.entries.isEmpty else {
            spool.close()
            return .now(.success(0))
        }
        let handed = HandedOver(spool)
        let (store, prefix, replace) = (self.store, self.prefix.string, self.replace)
        return store.pool.executor.writeReply {
            defer { handed.value.close() }
            return try await store.commitRestore(handed.value, prefix: prefix, replace: replace)
        }
    }

    func abort() {
        spool?.close()
        spool = nil
    }

    private static let spent = StoreError.corrupt(path: "(restore)", reason: "the restore was already committed or aborted")
}
