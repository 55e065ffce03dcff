import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

extension PostgresStore {
    /// The live row's metadata in one query, without the value's bytes: a
    /// conditional write with `Expect: 100-continue` is checked against it
    /// before its body is asked for, and no thread waits meanwhile.
    package func currentMetadata(of key: StoreKey) -> StoreReply<ValueMetadata?> {
        pool.executor.reply { [self] in
            let now = nowNanos()
            return try await pool.read { db in
                self.currentRow(from: try await db.pipeline([self.currentRow(key.string)])[0], key: key.string, now: now)
            }?.live
        }
    }
}
