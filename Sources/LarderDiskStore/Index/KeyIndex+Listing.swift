import LarderStorage
import LarderValueFile
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

extension KeyIndex {
    // MARK: - Listing

    /// The same page `DirectoryLister` yields (see `DiskStore.list`): keys
    /// under `prefix` after `after`, expired ones hidden, at most `limit`
    /// items; with `groupByDirectory`, a deeper key folds into its next
    /// `/`-ended prefix, listed once (as long as it holds any key).
    func list(prefix: [UInt8], after: [UInt8]?, limit: Int, groupByDirectory: Bool, nowNanos: Int64) -> StoreListing {
        var listing = StoreListing()
        var emitted = 0
        var lastTaken: [UInt8]? = nil
        func take(_ sortKey: [UInt8], _ add: (inout StoreListing) -> Void) -> Bool {
            if emitted == limit {
                listing.next = lastTaken.map { String(decoding: $0, as: UTF8.self) }
                return false
            }
            add(&listing)
            emitted += 1
            lastTaken = sortKey
            return true
        }
        func isAfterCursor(_ key: [UInt8]) -> Bool {
            guard let after else { return true }
            return after.lexicographicallyPrecedes(key)
        }
        lock.withLock {
            var p: Position
            if let after, !after.lexicographicallyPrecedes(prefix) {
                p = after.withUnsafeBufferPointer { lowerBound($0, strict: true) }
            } else {
                p = prefix.withUnsafeBufferPointer { lowerBound($0) }
            }
            while p.block < blocks.count {
                let block = blocks[p.block]
                let (underPrefix, slash) = block.withKey(p.index) { k -> (Bool, Int?) in
                    guard k.count >= prefix.count, prefix.withUnsafeBufferPointer({
                        Self.compare(UnsafeBufferPointer(rebasing: k[..<prefix.count]), $0) == 0
                    }) else { return (false, nil) }
                    guard groupByDirectory else { return (true, nil) }
                    return (true, k[prefix.count...].firstIndex(of: 0x2F))
                }
                guard underPrefix else { break }
                if let slash {
                    let group = Array(block.bytes[block.start(p.index)...(block.start(p.index) + slash)])
                    if isAfterCursor(group) {
                        guard take(group, { $0.prefixes.append(String(decoding: group, as: UTF8.self)) }) else { return }
                    }
                    // Past every key starting with `group`: '/' + 1 is '0'.
                    var skip = group
                    skip[skip.count - 1] = 0x30
                    p = skip.withUnsafeBufferPointer { lowerBound($0) }
                    continue
                }
                let entry = block.entries[p.index]
                if !entry.isTombstone && !(entry.expires != 0 && entry.expires <= nowNanos) {
                    let key = block.key(p.index)
                    let meta = ValueMetadata(key: String(decoding: key, as: UTF8.self), contentType: contentTypes[Int(entry.contentType)],
                                             size: entry.size, version: entry.version, modifiedNanos: entry.modified,
                                             expiresNanos: entry.expires == 0 ? nil : entry.expires,
                                             attributes: anyAttributes ? attributes[Array(key)] : nil)
                    guard take(key, { $0.values.append(ListedValue(key: meta.key, metadata: meta, storedSize: Int(entry.stored))) }) else { return }
                }
                advance(&p)
            }
        }
        return listing
    }
}
