import LarderValueFile
import LarderStoreVocabulary

/// A snapshot restore applied all or nothing (API.md, Snapshots): values
/// are staged where no reader, watcher or change feed sees them, then
/// `commit` publishes every one of them in one step. A reader sees the old
/// set under the prefix or the new one, never a mix, and a crash or a
/// failure at any point (a full disk, a lost database, `kill -9`) leaves
/// one or the other: the disk store stages files and logs its intent before
/// it publishes (rolled forward at start-up), the PostgreSQL store writes in
/// one transaction.
///
/// Used by one thread at a time: the caller stages values in document
/// order, then commits (or aborts) once.
public protocol RestoreTransaction: AnyObject {
    /// The prefix every staged key lies under (checked by the caller).
    var prefix: StorePrefix { get }
    /// Stages the next value of `key`: stream its bytes into the writer
    /// (attributes included), then its `finish` answers at once with
    /// nothing published yet. A key staged twice ends as its last value says.
    func stage(key: StoreKey, contentType: String, expiresNanos: Int64?) throws -> ValueWriter
    /// Publishes every staged value in one step (with `replace`, after
    /// removing everything else under the prefix) and makes it durable;
    /// answers how many keys were published (a key staged twice counts
    /// once). After a failure nothing
    /// was published. The transaction is spent either way.
    func commit() -> StoreReply<Int>
    /// Drops everything staged; nothing is published. Safe to call more
    /// than once, and after `commit`.
    func abort()
}
