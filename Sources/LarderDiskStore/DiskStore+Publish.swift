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

/// Writes: uploads into temp files, then the publish (condition check and
/// rename under the key's stripe barrier), and read-modify-write updates.
extension DiskStore {
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

    func createTempFile(for key: StoreKey, name: String) throws -> (String, Int32) {
        try locked(rootQueue) { () -> (String, Int32) in
            let path = valuesRoot + "/" + DiskNames.relativeDirectory(of: key) + name
            var attempt = 0
            while true {
                let fd = POSIX.openPath(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
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
    func makeDirectories(root: String, segments: ArraySlice<String>) throws {
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

    func makeDirectoriesOnce(root: String, segments: ArraySlice<String>) throws {
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
            // An unconditional write needs only the replaced value's sizes
            // and expiry: once the key index holds every key, it has them
            // (no file read; ~6,000 instructions and an open a 1 KiB PUT).
            if condition == nil && index.isReady {
                return try publishKnownByIndex(tempPath: tempPath, fd: fd, key: key, metadata: metadata,
                                               fileSize: fileSize, finalPath: finalPath, stripe: stripe)
            }
            let epochBefore = cache.epoch(stripe: stripe)
            let early = try existingFile(key, path: finalPath)
            let liveBefore = try locked(stripes[stripe], barrier: true) { () -> Bool in
                let old = cache.epoch(stripe: stripe) == epochBefore ? early : try existingFile(key, path: finalPath)
                let liveBefore: Bool
                if let condition {
                    // A condition needs the metadata: a damaged header fails the write.
                    let current = try old?.metadata.get()
                    let live = current.flatMap { $0.isExpired(now: nowNanos()) ? nil : $0 }
                    try condition(live)
                    liveBefore = live != nil
                } else if case .success(let current)? = old?.metadata {
                    // A value that expired but is not swept yet was absent to every reader.
                    liveBefore = !current.isExpired(now: nowNanos())
                } else {
                    liveBefore = old != nil && !expiries.hasExpired(key, nowNanos: nowNanos())
                }
                try place(tempPath: tempPath, fd: fd, key: key, metadata: metadata, fileSize: fileSize,
                          finalPath: finalPath, stripe: stripe)
                let oldLogical = Int64((try? old?.metadata.get())?.size ?? 0)
                totals.add(keys: old == nil ? 1 : 0, logical: Int64(metadata.size) - oldLogical,
                           stored: fileSize - (old?.fileSize ?? 0))
                return liveBefore
            }
            return !liveBefore
        }
    }

    /// `publish` without a condition once the key index is ready: the value
    /// replaced is the index's entry, read under the barrier. (Called on
    /// the root queue.)
    private func publishKnownByIndex(tempPath: String, fd: Int32, key: StoreKey, metadata: ValueMetadata, fileSize: Int64,
                                     finalPath: String, stripe: Int) throws -> Bool {
        let liveBefore = try locked(stripes[stripe], barrier: true) { () -> Bool in
            let old = index.replaced(key.bytes)
            // A value that expired but is not swept yet was absent to every reader.
            let liveBefore = old.map { $0.expiresNanos.map { $0 > nowNanos() } ?? true } ?? false
            try place(tempPath: tempPath, fd: fd, key: key, metadata: metadata, fileSize: fileSize,
                      finalPath: finalPath, stripe: stripe)
            totals.add(keys: old == nil ? 1 : 0, logical: Int64(metadata.size) - Int64(old?.size ?? 0),
                       stored: fileSize - (old?.stored ?? 0))
            return liveBefore
        }
        return !liveBefore
    }

    /// The rename and everything that must change with it, under the key's
    /// barrier: the cache, the index, the expiry, the change feed.
    private func place(tempPath: String, fd: Int32, key: StoreKey, metadata: ValueMetadata, fileSize: Int64,
                       finalPath: String, stripe: Int) throws {
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
    func existingFile(_ key: StoreKey, path: String) throws -> ValueFileInfo? {
        if let entry = cache.lookup(key.bytes) {
            return ValueFileInfo(fileSize: Int64(entry.file.count), metadata: .success(entry.metadata))
        }
        return try ValueFileHeader.inspect(path: path)
    }

    /// rename(2), recovering when a reset or prefix delete moved the temp
    /// file or removed the target directory while the body was uploading:
    /// the value is then rebuilt from the still-open temp file descriptor.
    func moveIntoPlace(tempPath: String, fd: Int32, finalPath: String, key: StoreKey) throws {
        if POSIX.renamePath(tempPath, finalPath) == 0 { return }
        guard errno == ENOENT else { throw StoreError.posix("rename", tempPath) }
        try makeDirectories(root: valuesRoot, segments: key.segments.dropLast())
        if POSIX.renamePath(tempPath, finalPath) == 0 { return }
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

    // MARK: - Read-modify-write

    /// Thrown inside `update` when another write got in between; it retries.
    private struct UpdateRace: Error {}

    /// Optimistic: reads a snapshot, builds the new value with no lock
    /// held, publishes only if the key still has the version that was read,
    /// and tries again if not. With fsync on, the publish answers after a
    /// flush, later: the attempts go on from there.
    public func update(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int,
                       _ transform: @escaping @Sendable (ValueMetadata?, [UInt8]?) throws -> UpdatedValue) -> StoreReply<PutOutcome> {
        update(key, condition: condition, maxValueBytes: maxValueBytes, attempts: 10_000, transform)
    }

    /// Runs attempts while they answer now; the first that answers later
    /// goes on in `outer` (given: the attempts before it answered later too),
    /// so a long run of retries is a loop, never a chain of replies.
    private func update(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int, attempts: Int,
                        into outer: StorePending<PutOutcome>? = nil,
                        _ transform: @escaping @Sendable (ValueMetadata?, [UInt8]?) throws -> UpdatedValue) -> StoreReply<PutOutcome> {
        func answer(_ result: Result<PutOutcome, any Error>) -> StoreReply<PutOutcome> {
            outer?.fulfil(result)
            return .now(result)
        }
        for attempt in 0..<attempts {
            let reply: StoreReply<PutOutcome>
            do {
                reply = try updateAttempt(key, condition: condition, maxValueBytes: maxValueBytes, transform).finish()
            } catch {
                return answer(.failure(error))
            }
            switch reply {
            case .now(.failure(let error)) where error is UpdateRace:
                continue
            case .now(let result):
                return answer(result)
            case .later(let pending):
                let left = attempts - attempt - 1
                let outer = outer ?? StorePending<PutOutcome>()
                pending.whenDone { result in
                    guard case .failure(let error) = result, error is UpdateRace, left > 0 else {
                        let raced = { if case .failure(let e) = result { return e is UpdateRace } else { return false } }()
                        return outer.fulfil(raced ? .failure(StoreError.contention(key: key.string)) : result)
                    }
                    // Off the committer's thread: the next attempt reads and writes files.
                    DispatchQueue.global().async {
                        _ = self.update(key, condition: condition, maxValueBytes: maxValueBytes, attempts: left,
                                        into: outer, transform)
                    }
                }
                return .later(outer)
            }
        }
        return answer(.failure(StoreError.contention(key: key.string)))
    }

    /// One attempt's upload, written and ready to finish: publishing it
    /// throws `UpdateRace` if another write got in since the read.
    private func updateAttempt(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int,
                               _ transform: (ValueMetadata?, [UInt8]?) throws -> UpdatedValue) throws -> ValueUpload {
        var current: ValueMetadata? = nil
        var bytes: [UInt8]? = nil
        do {
            let value = try openValue(key)
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
        } catch {
            upload.abort()
            throw error
        }
        return upload
    }

    public func makeUniqueID() -> StoreReply<String> { .catching { DiskNames.hex(try nextVersion()) } }
}
