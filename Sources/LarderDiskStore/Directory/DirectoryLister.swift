import LarderStorage
import LarderValueFile
import LarderModel
import FoundationEssentials
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// Walks the values directory in key byte order. In each directory a value
/// file `s` sorts as `s` and a directory `s\` as `s/` (all its keys start
/// with that), so visiting entries in that order and recursing yields every
/// key in global byte order, and whole subtrees before `after` are skipped.
struct DirectoryLister {
    let after: [UInt8]?
    let limit: Int
    let groupByDirectory: Bool
    let nowNanos: Int64
    let logger: Logger
    private var listing = StoreListing()
    private var emitted = 0
    /// The sort key of the last item taken, for `next`.
    private var lastTaken: [UInt8]?
    private var full = false
    private var header = [UInt8](repeating: 0, count: 4096)

    init(after: [UInt8]?, limit: Int, groupByDirectory: Bool, nowNanos: Int64, logger: Logger) {
        self.after = after
        self.limit = limit
        self.groupByDirectory = groupByDirectory
        self.nowNanos = nowNanos
        self.logger = logger
    }

    private struct Item {
        let sortKey: [UInt8]
        let name: String
        package let isDirectory: Bool
    }

    private static func entries(of directory: String, keyPrefix: [UInt8]) throws -> [Item] {
        guard let raw = try POSIX.directoryEntries(directory) else { return [] }
        var items: [Item] = []
        items.reserveCapacity(raw.count)
        for entry in raw {
            let name = String(decoding: entry.name, as: UTF8.self)
            switch DiskNames.classify(name: entry.name, isDirectory: entry.isDirectory) {
            case .value(let segment):
                items.append(Item(sortKey: keyPrefix + segment, name: name, isDirectory: false))
            case .directory(let segment):
                var seg = segment
                if seg == nil {
                    seg = try? readHashedName(directory + "/" + name)
                }
                guard let s = seg else { continue }
                items.append(Item(sortKey: keyPrefix + s + [0x2F], name: name, isDirectory: true))
            case .temp, .other:
                continue
            }
        }
        items.sort { $0.sortKey.lexicographicallyPrecedes($1.sortKey) }
        return items
    }

    private static func readHashedName(_ directory: String) throws -> [UInt8] {
        let path = directory + "/" + DiskNames.hashedNameFile
        let fd = try POSIX.open(path, O_RDONLY)
        defer { Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = try buffer.withUnsafeMutableBytes { (raw) in try POSIX.pread(fd, raw, at: 0, path: path) }
        return Array(buffer[0..<n])
    }

    private func isAfterCursor(_ key: [UInt8]) -> Bool {
        guard let after else { return true }
        return after.lexicographicallyPrecedes(key)
    }

    mutating func walk(_ directory: String, keyPrefix: [UInt8]) throws {
        for item in try Self.entries(of: directory, keyPrefix: keyPrefix) {
            if full { return }
            let path = directory + "/" + item.name
            if !item.isDirectory {
                guard isAfterCursor(item.sortKey) else { continue }
                guard let value = readValue(path) else { continue }
                take(item.sortKey) { $0.values.append(value) }
                continue
            }
            // Every key below starts with item.sortKey ("…/"). If the cursor
            // is past that and not inside it, the whole subtree is done.
            if let after, !isAfterCursor(item.sortKey), !after.starts(with: item.sortKey) { continue }
            if groupByDirectory {
                guard isAfterCursor(item.sortKey), hasAnyValue(path) else { continue }
                take(item.sortKey) { $0.prefixes.append(String(decoding: item.sortKey, as: UTF8.self)) }
            } else {
                try walk(path, keyPrefix: item.sortKey)
            }
        }
    }

    private mutating func take(_ sortKey: [UInt8], _ add: (inout StoreListing) -> Void) {
        if emitted == limit {
            // One more than the page holds: there is a next page.
            full = true
            listing.next = lastTaken.map { String(decoding: $0, as: UTF8.self) }
            return
        }
        add(&listing)
        emitted += 1
        lastTaken = sortKey
    }

    /// Metadata of one value file; nil if it vanished, expired or is unreadable.
    private mutating func readValue(_ path: String) -> ListedValue? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        do {
            let size = try POSIX.fileSize(fd, path: path)
            var parsed = try readHeader(fd, path: path, count: header.count)
            if case .needMore(let needed) = parsed, needed <= size {
                header = [UInt8](repeating: 0, count: needed)
                parsed = try readHeader(fd, path: path, count: needed)
            }
            guard case .complete(let meta, _) = parsed else {
                throw StoreError.corrupt(path: path, reason: "the gzip header is truncated")
            }
            if meta.isExpired(nowNanos: nowNanos) { return nil }
            return ListedValue(key: meta.key, metadata: meta, storedSize: size)
        } catch {
            logger.warning("listing skips \(path): \(error)")
            return nil
        }
    }

    private mutating func readHeader(_ fd: Int32, path: String, count: Int) throws -> ValueFileHeader.Parse {
        let n = try header.withUnsafeMutableBytes { (raw) in
            try POSIX.pread(fd, UnsafeMutableRawBufferPointer(rebasing: raw[0..<count]), at: 0, path: path)
        }
        return try header.withUnsafeBytes { (raw) in
            try ValueFileHeader.parse(UnsafeRawBufferPointer(rebasing: raw[0..<n]), path: path)
        }
    }

    /// Whether a directory holds at least one value (empty directories can
    /// linger briefly after deletes and must not show up as prefixes).
    private func hasAnyValue(_ directory: String) -> Bool {
        guard let entries = try? POSIX.directoryEntries(directory) else { return false }
        var subdirectories: [String] = []
        for entry in entries {
            switch DiskNames.classify(name: entry.name, isDirectory: entry.isDirectory) {
            case .value: return true
            case .directory: subdirectories.append(directory + "/" + String(decoding: entry.name, as: UTF8.self))
            default: continue
            }
        }
        return subdirectories.contains(where: hasAnyValue)
    }

    func finish() -> StoreListing { listing }
}
