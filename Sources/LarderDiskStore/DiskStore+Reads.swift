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

extension DiskStore {
    // MARK: - Reads

    /// Opens the value of `key`, now; `.notFound` when absent or expired.
    @inlinable
    public func open(_ key: StoreKey) -> StoreReply<StoredValue> {
        .catching { try openValue(key) }
    }

    /// The metadata of the live value, now (a cache hit, or the header of
    /// its file).
    public func currentMetadata(of key: StoreKey) -> StoreReply<ValueMetadata?> {
        .catching {
            do {
                let value = try openValue(key)
                defer { value.close() }
                return value.metadata
            } catch StoreError.notFound {
                return nil
            }
        }
    }

    /// `open`, on the caller's thread (the store's synchronous form).
    @usableFromInline
    package func openValue(_ key: StoreKey) throws -> StoredValue {
        // A cache hit needs no lock: an entry is dropped (under the key's
        // write barrier) before the write that replaces it is acknowledged,
        // so what the cache holds at the moment of the lookup is a value
        // the key had at that moment.
        let value: StoredValue
        if let entry = cache.lookup(key.bytes) {
            value = StoredValue(cached: entry, zlib: zlib)
        } else {
            let stripe = stripeIndex(for: key)
            let (fd, path, epoch) = try locked(rootQueue) { () -> (Int32, String, UInt64) in
                try locked(stripes[stripe]) { () -> (Int32, String, UInt64) in
                    // Read under the same lock as the open: a write after it
                    // bumps the epoch, and the insert below is then refused.
                    let epoch = cache.epoch(stripe: stripe)
                    let path = valuesRoot + "/" + DiskNames.relativePath(of: key)
                    let fd = POSIX.openPath(path, O_RDONLY | O_CLOEXEC)
                    if fd < 0 {
                        if errno == ENOENT || errno == ENOTDIR || errno == EISDIR { throw StoreError.notFound }
                        throw StoreError.posix("open", path)
                    }
                    return (fd, path, epoch)
                }
            }
            value = try StoredValue(fd: fd, path: path, zlib: zlib)
            if cache.isEnabled, let entry = try value.cacheEntry() {
                cache.insert(key.bytes, entry, stripe: stripe, epoch: epoch)
            }
        }
        if value.metadata.isExpired(now: nowNanos()) { throw StoreError.notFound }
        return value
    }
}
