import LarderStorage
import LarderValueFile
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// The index's storage: entries in sorted blocks of keys packed into one
/// byte array each. Plain values; `KeyIndex` guards them with its lock.
extension KeyIndex {
    struct Entry {
        var version: UInt64
        var modified: Int64
        /// 0: never.
        var expires: Int64
        var size: UInt64
        var stored: Int64
        /// Index into `contentTypes`; `tombstone` for a key deleted during the build.
        var contentType: UInt32

        static let tombstone = UInt32.max
        var isTombstone: Bool { contentType == Self.tombstone }
    }

    /// Keys of one block, in byte order.
    struct Block {
        var bytes: [UInt8] = []
        /// End offset in `bytes` of each key.
        var ends: [UInt32] = []
        var entries: [Entry] = []

        var count: Int { ends.count }
        func start(_ i: Int) -> Int { i == 0 ? 0 : Int(ends[i - 1]) }

        func withKey<T>(_ i: Int, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
            let s = start(i), e = Int(ends[i])
            return bytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[s..<e])) }
        }

        func key(_ i: Int) -> [UInt8] { Array(bytes[start(i)..<Int(ends[i])]) }

        /// First index whose key is >= `probe` (or > with `strict`).
        func lowerBound(_ probe: UnsafeBufferPointer<UInt8>, strict: Bool = false) -> Int {
            var lo = 0, hi = count
            while lo < hi {
                let mid = (lo + hi) / 2
                let c = withKey(mid) { KeyIndex.compare($0, probe) }
                if c < 0 || (strict && c == 0) { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }

        package mutating func insert(_ key: UnsafeBufferPointer<UInt8>, _ entry: Entry, at i: Int) {
            // Grow by an eighth, not the doubling of a plain insert: the
            // slack stays small for a million keys.
            if entries.count == entries.capacity {
                let more = max(8, entries.count / 8)
                entries.reserveCapacity(entries.count + more)
                ends.reserveCapacity(entries.count + more)
            }
            if bytes.count + key.count > bytes.capacity {
                bytes.reserveCapacity(bytes.count + key.count + max(64, bytes.count / 8))
            }
            let s = start(i)
            bytes.insert(contentsOf: key, at: s)
            ends.insert(UInt32(s), at: i)  // fixed up below
            for j in i..<ends.count { ends[j] += UInt32(key.count) }
            entries.insert(entry, at: i)
        }

        mutating func remove(_ range: Range<Int>) {
            guard !range.isEmpty else { return }
            let s = start(range.lowerBound), e = Int(ends[range.upperBound - 1])
            bytes.removeSubrange(s..<e)
            ends.removeSubrange(range)
            entries.removeSubrange(range)
            for j in range.lowerBound..<ends.count { ends[j] -= UInt32(e - s) }
        }

        /// Moves the upper half into a new block; both halves get exact
        /// capacities (a grown array keeps its capacity when it shrinks).
        mutating func split() -> Block {
            let half = count / 2
            let cut = start(half)
            var upper = Block()
            upper.bytes = Array(bytes[cut...])
            upper.ends = ends[half...].map { $0 - UInt32(cut) }
            upper.entries = Array(entries[half...])
            bytes = Array(bytes[..<cut])
            ends = Array(ends[..<half])
            entries = Array(entries[..<half])
            return upper
        }
    }

    /// Small blocks keep an insert's moves short (a random insert moves
    /// half a block) and cost about one byte per key of overhead.
    static let blockCapacity = 128
    /// Keys per block when blocks are packed (`compact`).
    static let packedBlock = 128
}
