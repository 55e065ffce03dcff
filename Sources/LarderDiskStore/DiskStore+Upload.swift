import LarderStorage
import LarderValueFile
import Dispatch

/// How the disk store publishes a finished upload: its data is made
/// durable, the temp file is renamed over the key's file under the key's
/// barrier (with the write condition checked there), and the rename is made
/// durable before the write is acknowledged.
extension DiskStore: UploadDestination {
    /// Blocks the calling thread while flushes make the value durable.
    package func finishUpload(_ upload: ValueUpload) throws -> PutOutcome {
        defer { upload.abort() }
        try upload.complete()
        // The data is on disk before the rename can make it the value.
        try makeDurable()
        let created = try publish(tempPath: upload.tempPath, fd: upload.fd, key: upload.key, metadata: upload.metadata,
                                  fileSize: upload.written, condition: upload.condition)
        // The rename is on disk before the answer.
        try makeDurable()
        return succeeded(upload, created: created)
    }

    /// Without holding the thread while flushes run: `completion` gets the
    /// outcome, on another thread, once the value is durable (with fsync
    /// off, at once on this one).
    package func finishUpload(_ upload: ValueUpload, then completion: @escaping @Sendable (Result<PutOutcome, Error>) -> Void) {
        guard let commit else {
            completion(Result { try finishUpload(upload) })
            return
        }
        guard upload.complete(orFail: completion) else { return }
        let handed = HandedUpload(upload)
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
                    completion(.failure(error))
                    return
                }
                // Stage 2: the rename is on disk before the answer.
                commit.afterDurable { error in
                    let upload = handed.value
                    defer { upload.abort() }
                    if let error {
                        completion(.failure(error))
                    } else {
                        completion(.success(self.succeeded(upload, created: created)))
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
