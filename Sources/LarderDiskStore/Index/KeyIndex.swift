import LarderStorage
import LarderValueFile
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// Every key of a `DiskStore` in byte order, with what a listing entry
/// shows (sizes, version, modified, expires, content type), so a page of
/// `limit` entries costs O(limit + log n) and no file opens.
///
/// Layout: sorted blocks of at most `blockCapacity` keys; a block keeps its
/// keys' bytes in one arena (`bytes`, with end offsets) and a fixed-size
/// `Entry` per key, content types interned. About 54 bytes plus the key's
/// own bytes per key once packed (see docs/design.md, key index).
///
/// Filling: the start-up scan runs in the background (`building`) while the
/// store serves. Every write and delete tells the index as it happens (under
/// the key's stripe barrier, or the root barrier for a reset or prefix
/// delete) and is authoritative; the scan only adds keys nobody touched
/// since it began. A delete during the build leaves a tombstone (a key) or
/// a prefix tombstone, so a header the scan read before the delete cannot
/// bring the key back. `finishBuild` drops the tombstones. Until then
/// listings do not use the index (`isReady`).
///
/// One mutex guards everything; a listing holds it for its page.
final class KeyIndex: @unchecked Sendable {
    let lock = Lock()
    // Guarded by `lock`.
    var blocks: [Block] = []
    var contentTypes: [String] = []
    var typeIDs: [String: UInt32] = [:]
    /// `contentTypes` may grow to this before unused types are dropped.
    var typeLimit = KeyIndex.initialTypeLimit
    static let initialTypeLimit = 1024
    var building = true
    var prefixTombstones: [[UInt8]] = []
    var liveCount = 0
    var logicalBytes: Int64 = 0
    var storedBytes: Int64 = 0
    var readyFlag = false
    /// The attributes of the values that have any (`ValueMetadata.attributes`,
    /// the S3 face's ETags and headers), by key: beside the blocks, so that
    /// values without any, nearly all of them, cost nothing more.
    var attributes: [[UInt8]: [UInt8]] = [:]
    /// Whether `attributes` has ever held any since the last reset: until
    /// then a write does not touch the dictionary (a generic lookup and an
    /// access check on every PUT, Benchmarks/callgrind.sh).
    var anyAttributes = false

    /// Whether the index holds every key (the start-up scan is done, or a
    /// reset made it complete): listings may use it.
    var isReady: Bool { lock.withLock { readyFlag } }

    /// Content types interned now (tests: the table stays bounded).
    var internedTypeCount: Int { lock.withLock { contentTypes.count } }

    /// Live keys and their bytes (tombstones not counted).
    var totals: (keys: Int, logical: Int64, stored: Int64) { lock.withLock { (liveCount, logicalBytes, storedBytes) } }

    // MARK: - Comparing

    static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let n = min(a.count, b.count)
        if n > 0 {
            let c = memcmp(a.baseAddress!, b.baseAddress!, n)
            if c != 0 { return Int(c) }
        }
        return a.count - b.count
    }

    // MARK: - Positions

    struct Position { var block: Int; var index: Int }

    /// The first key >= `probe` (> with `strict`).
    func lowerBound(_ probe: UnsafeBufferPointer<UInt8>, strict: Bool = false) -> Position {
        // The last block whose first key is <= probe holds the answer, or
        // else it is the next block's first key (which is > probe).
        var lo = 0, hi = blocks.count
        while lo < hi {
            let mid = (lo + hi) / 2
            let c = blocks[mid].withKey(0) { Self.compare($0, probe) }
            if c <= 0 { lo = mid + 1 } else { hi = mid }
        }
        guard lo > 0 else { return Position(block: 0, index: 0) }
        let b = lo - 1
        let i = blocks[b].lowerBound(probe, strict: strict)
        if i == blocks[b].count { return Position(block: lo, index: 0) }
        return Position(block: b, index: i)
    }

    func advance(_ p: inout Position) {
        p.index += 1
        if p.index >= blocks[p.block].count { p.block += 1; p.index = 0 }
    }

    /// The position of `key` if present, else where it would go.
    func find(_ key: UnsafeBufferPointer<UInt8>) -> (Position, found: Bool) {
        let p = lowerBound(key)
        guard p.block < blocks.count else { return (p, false) }
        let found = blocks[p.block].withKey(p.index) { Self.compare($0, key) } == 0
        return (p, found)
    }

    func insert(_ key: UnsafeBufferPointer<UInt8>, _ entry: Entry, at p: Position) {
        if blocks.isEmpty { blocks.append(Block()) }
        var b = p.block, i = p.index
        if b == blocks.count { b -= 1; i = blocks[b].count }  // after the last key
        if b == blocks.count - 1 && i == blocks[b].count && i >= Self.blockCapacity {
            // Appending (keys written in order): start a block, leave this one full.
            var fresh = Block()
            fresh.insert(key, entry, at: 0)
            blocks.append(fresh)
            return
        }
        blocks[b].insert(key, entry, at: i)
        if blocks[b].count > Self.blockCapacity {
            let upper = blocks[b].split()
            blocks.insert(upper, at: b + 1)
        }
    }

    func removeAt(_ p: Position) {
        blocks[p.block].remove(p.index..<(p.index + 1))
        if blocks[p.block].count == 0 { blocks.remove(at: p.block) }
    }

    func account(_ entry: Entry, _ sign: Int) {
        guard !entry.isTombstone else { return }
        liveCount += sign
        logicalBytes += Int64(sign) * Int64(entry.size)
        storedBytes += Int64(sign) * entry.stored
    }

    func typeID(_ contentType: String) -> UInt32 {
        if let id = typeIDs[contentType] { return id }
        // Types of deleted or rewritten keys stay interned until the table
        // is full; then it keeps only the types in use, so a client sending
        // a new Content-Type with every write cannot grow it without bound.
        if contentTypes.count >= typeLimit { dropUnusedTypes() }
        let id = UInt32(contentTypes.count)
        contentTypes.append(contentType)
        typeIDs[contentType] = id
        return id
    }

    /// Renumbers the content types in use and forgets the rest: one pass
    /// over the entries, and the limit doubles past what is in use, so the
    /// cost is spread over that many new types.
    func dropUnusedTypes() {
        var renumbered: [UInt32: UInt32] = [:]
        var kept: [String] = []
        for b in blocks.indices {
            for i in blocks[b].entries.indices where !blocks[b].entries[i].isTombstone {
                let old = blocks[b].entries[i].contentType
                if let id = renumbered[old] {
                    blocks[b].entries[i].contentType = id
                } else {
                    let id = UInt32(kept.count)
                    renumbered[old] = id
                    kept.append(contentTypes[Int(old)])
                    blocks[b].entries[i].contentType = id
                }
            }
        }
        contentTypes = kept
        typeIDs = Dictionary(uniqueKeysWithValues: kept.enumerated().map { ($1, UInt32($0)) })
        typeLimit = max(Self.initialTypeLimit, 2 * kept.count)
    }

    func makeEntry(_ meta: ValueMetadata, stored: Int64) -> Entry {
        Entry(version: meta.version, modified: meta.modifiedNanos, expires: meta.expiresNanos ?? 0,
              size: meta.size, stored: stored, contentType: typeID(meta.contentType))
    }

    // MARK: - Changes (authoritative)

    /// A write published `meta` for `key` (a file of `stored` bytes).
    func set(_ key: [UInt8], _ meta: ValueMetadata, stored: Int64) {
        lock.withLock {
            let entry = makeEntry(meta, stored: stored)
            key.withUnsafeBufferPointer { k in
                let (p, found) = find(k)
                if found {
                    account(blocks[p.block].entries[p.index], -1)
                    blocks[p.block].entries[p.index] = entry
                } else {
                    insert(k, entry, at: p)
                }
                account(entry, 1)
            }
            if let kept = meta.attributes {
                attributes[key] = kept
                anyAttributes = true
            } else if anyAttributes {
                attributes[key] = nil
            }
        }
    }

    /// What a write replacing `key` needs to know of the value before it:
    /// its sizes and expiry, nil when there is none. Asked under the key's
    /// stripe barrier (where every change of the key is told to the index),
    /// and only once `isReady`: until then the index may lack keys.
    func replaced(_ key: [UInt8]) -> (size: UInt64, stored: Int64, expiresNanos: Int64?)? {
        lock.withLock {
            key.withUnsafeBufferPointer { k in
                let (p, found) = find(k)
                guard found else { return nil }
                let e = blocks[p.block].entries[p.index]
                if e.isTombstone { return nil }
                return (e.size, e.stored, e.expires == 0 ? nil : e.expires)
            }
        }
    }

    /// `key`'s file was removed.
    func remove(_ key: [UInt8]) {
        lock.withLock {
            key.withUnsafeBufferPointer { k in
                let (p, found) = find(k)
                let tomb = Entry(version: 0, modified: 0, expires: 0, size: 0, stored: 0, contentType: Entry.tombstone)
                if found {
                    account(blocks[p.block].entries[p.index], -1)
                    if building { blocks[p.block].entries[p.index] = tomb } else { removeAt(p) }
                } else if building {
                    insert(k, tomb, at: p)
                }
            }
            if anyAttributes { attributes[key] = nil }
        }
    }

    /// Every key starting with `prefix` went; returns their live count and bytes.
    @discardableResult
    func removePrefix(_ prefix: [UInt8]) -> (keys: Int, logical: Int64, stored: Int64) {
        lock.withLock {
            if building { prefixTombstones.append(prefix) }
            if anyAttributes { attributes = attributes.filter { !$0.key.starts(with: prefix) } }
            var keys = 0, logical: Int64 = 0, stored: Int64 = 0
            prefix.withUnsafeBufferPointer { pre in
                var p = lowerBound(pre)
                while p.block < blocks.count {
                    // Within this block, the run of keys under the prefix from p.index.
                    var end = p.index
                    while end < blocks[p.block].count,
                          blocks[p.block].withKey(end, { $0.count >= pre.count && Self.compare(UnsafeBufferPointer(rebasing: $0[..<pre.count]), pre) == 0 }) {
                        let e = blocks[p.block].entries[end]
                        if !e.isTombstone { keys += 1; logical += Int64(e.size); stored += e.stored }
                        account(e, -1)
                        end += 1
                    }
                    let reachedEnd = end == blocks[p.block].count
                    blocks[p.block].remove(p.index..<end)
                    if blocks[p.block].count == 0 { blocks.remove(at: p.block) } else if reachedEnd { p.block += 1 }
                    if !reachedEnd { break }
                    p.index = 0
                }
            }
            return (keys, logical, stored)
        }
    }

    /// Everything went (a reset): the index is empty and complete.
    func reset() {
        lock.withLock {
            blocks = []
            prefixTombstones = []
            // Interned types are kept until a reset (a key's delete does not
            // know whether another key still uses its type).
            contentTypes = []
            typeIDs = [:]
            typeLimit = Self.initialTypeLimit
            attributes = [:]
            anyAttributes = false
            liveCount = 0; logicalBytes = 0; storedBytes = 0
            building = false
            readyFlag = true
        }
    }

    // MARK: - The start-up scan

    /// Adds what the scan read, for keys nobody wrote or deleted since the
    /// scan began; calls `added` (under the index's lock) for each one added.
    func addScanned(_ batch: [(key: [UInt8], meta: ValueMetadata, stored: Int64)],
                    _ added: (ValueMetadata, Int64) -> Void) {
        lock.withLock {
            guard building else { return }
            for item in batch {
                if prefixTombstones.contains(where: { item.key.starts(with: $0) }) { continue }
                item.key.withUnsafeBufferPointer { k in
                    let (p, found) = find(k)
                    guard !found else { return }
                    let entry = makeEntry(item.meta, stored: item.stored)
                    insert(k, entry, at: p)
                    account(entry, 1)
                    if let kept = item.meta.attributes { attributes[item.key] = kept; anyAttributes = true }
                    added(item.meta, item.stored)
                }
            }
        }
    }

    /// The scan is done: tombstones go, blocks are packed, listings may use the index.
    func finishBuild() {
        lock.withLock {
            guard building else { return }
            building = false
            prefixTombstones = []
            compact()
            readyFlag = true
        }
    }

    /// Rebuilds the blocks packed (`packedBlock` keys, exact capacity), without tombstones.
    func compact() {
        var packed: [Block] = []
        packed.reserveCapacity(liveCount / Self.packedBlock + 1)
        var current = Block()
        func flush() {
            guard current.count > 0 else { return }
            let bytes = current.bytes
            current.bytes = [UInt8](unsafeUninitializedCapacity: bytes.count) { buffer, n in
                _ = buffer.initialize(from: bytes)
                n = bytes.count
            }
            packed.append(current)
            current = Block()
        }
        // Each old block is let go of as soon as it is copied: the peak is
        // the index once, not twice.
        for b in blocks.indices {
            let block = blocks[b]
            blocks[b] = Block()
            for i in 0..<block.count where !block.entries[i].isTombstone {
                if current.count == 0 {
                    current.ends.reserveCapacity(Self.packedBlock)
                    current.entries.reserveCapacity(Self.packedBlock)
                }
                block.withKey(i) { current.bytes.append(contentsOf: $0) }
                current.ends.append(UInt32(current.bytes.count))
                current.entries.append(block.entries[i])
                if current.count == Self.packedBlock { flush() }
            }
        }
        flush()
        blocks = packed
    }

    // MARK: - Measuring

    /// Bytes the blocks hold (array capacities), for the per-key figure in docs/design.md.
    var approximateBytes: Int {
        lock.withLock {
            blocks.reduce(blocks.capacity * MemoryLayout<Block>.stride) {
                $0 + $1.bytes.capacity + $1.ends.capacity * 4 + $1.entries.capacity * MemoryLayout<Entry>.stride + 96
            }
        }
    }

    /// Live keys in order (tests).
    var allKeys: [String] {
        lock.withLock {
            blocks.flatMap { b in (0..<b.count).filter { !b.entries[$0].isTombstone }.map { String(decoding: b.key($0), as: UTF8.self) } }
        }
    }
}
