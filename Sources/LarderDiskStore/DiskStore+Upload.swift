import LarderStorage
import LarderValueFile
import Dispatch
import LarderStoreVocabulary

/// How the disk store publishes a finished upload: its data is made
/// durable, the temp file is renamed over the key's file under the key's
/// barrier (with the write condition checked there), and the rename is made
/// durable before the write is acknowledged.
extension DiskStore: UploadDestination {
    /// A value file under a page takes one block whatever its bytes.
    package var storesSmallValuesUncompressed: Bool { true }

    package func modifiedNanos() -> Int64 { clock.nowNanos() }

    /// With fsync off, publishes now. With it on, answers later, once
    /// flushes have made the value durable, without holding the caller's
    /// thread while they run.
    package func finishUpload(_ upload: ValueUpload) -> StoreReply<PutOutcome> {
        guard let commit else {
            return .catching {
                defer { upload.abort() }
                try upload.complete()
                let created = try publish(tempPath: upload.tempPath, fd: upload.fd, key: upload.key, metadata: upload.metadata,
                                          fileSize: upload.written, condition: upload.condition)
                return succeeded(upload, created: created)
            }
        }
        if let failed = upload.completeOrFail() { return failed }
        let handed = HandedUpload(upload)
        return .later { pending in
            // Stage 1: the file's data is on disk before the rename.
            commit.afterDurable { error in
                // The committer's queue must stay free for flushing: the
                // rename (I/O under the key's barrier) runs elsewhere.
                DispatchQueue.global().async {
                    let upload = handed.value
                    let created: Bool
                    do {
                        if let error { throw error }
                        created = try self.publish(tempPath: upload.tempPath, fd: upload.fd, key: upload.key,
                                                   metadata: upload.metadata, fileSize: upload.written, condition: upload.condition)
                    } catch {
                        upload.abort()
                        pending.fulfil(.failure(error))
                        return
                    }
                    // Stage 2: the rename is on disk before the answer.
                    commit.afterDurable { error in
                        let upload = handed.value
                        let result: Result<PutOutcome, any Error> =
                            error.map { .failure($0) } ?? .success(self.succeeded(upload, created: created))
                        // Let go of the temp file before the answer: whoever
                        // the answer wakes may abort it too (a failed `get()`).
                        upload.abort()
                        pending.fulfil(result)
                    }
                }
            }
        }
    }

    /// After the rename is durable: counts the write, returns the outcome.
    func succeeded(_ upload: ValueUpload, created: Bool) -> PutOutcome {
        if commit != nil { durability?.addWrite() }
        return upload.succeeded(created: created)
    }
}
