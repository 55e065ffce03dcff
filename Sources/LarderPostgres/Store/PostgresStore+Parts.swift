import LarderStorage
import LarderValueFile

/// A large value's bytes (beyond `options.partSize`) go into
/// `larder_parts` before the row that names them: an upload's, and each
/// large value of a restore (`commitRestore`).
extension PostgresStore {
    /// Writes a large value's parts under a new blob id, each `INSERT`
    /// committing on its own: a long transaction would hold back every
    /// server's change feed (`WriteLocks`) for as long as the copy takes.
    /// Parts no value names are never read; a reset or a delete of the
    /// value that names them removes them.
    func copyParts(_ upload: ValueUpload) async throws -> Int64 {
        try await copyParts(length: Int(upload.written) - upload.headerLength) { offset, count in
            try self.bytes(of: upload, at: upload.headerLength + offset, count: count)
        }
    }

    /// `copyParts` of the `length` bytes after a value file's header, which
    /// `read(offset, count)` gives (offsets from the header's end).
    func copyParts(length: Int, read: (_ offset: Int, _ count: Int) throws -> [UInt8]) async throws -> Int64 {
        let partSize = options.partSize
        let id = try await pool.withConnection { db in try await db.query("SELECT nextval('larder_blobs')").first!.int(0)! }
        do {
            try await pool.withConnection { db in
                var offset = 0
                var part: Int64 = 0
                while offset < length {
                    let n = min(partSize, length - offset)
                    let bytes = try read(offset, n)
                    _ = try await db.query("INSERT INTO larder_parts (blob, part, bytes) VALUES ($1, $2, $3)",
                                           [.int(id), .int(part), .bytes(bytes)])
                    offset += n
                    part += 1
                }
            }
        } catch {
            await dropParts(id)
            throw PGPool.mapped(error)
        }
        return id
    }

    /// Removes the parts of a value that did not commit (best effort: the
    /// database may be gone; the parts are then only space).
    func dropParts(_ blob: Int64) async {
        do {
            _ = try await pool.withConnection { db in try await db.query("DELETE FROM larder_parts WHERE blob = $1", [.int(blob)]) }
        } catch {
            logger.debug("postgres: removing the parts of an upload that did not commit failed: \(error)")
        }
    }
}
