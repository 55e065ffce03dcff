import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// The values a restore has staged, out of memory and out of the database
/// until it commits: each value file, as a PUT of the same value would
/// store it, goes into one unlinked spool file (nothing is left behind
/// however the process ends), and only its header and metadata stay in
/// memory (a couple of hundred bytes a value). One file rather than one per
/// value: a restore may stage tens of thousands of values, and a staged
/// upload kept whole would hold its buffers (16 KiB or more) and possibly a
/// descriptor until the commit.
///
/// Used by one thread at a time (the stager, then the commit's task).
final class RestoreSpool {
    /// One staged value file.
    struct Entry {
        let key: String
        /// The file's header with version and modified time 0: the commit
        /// stamps both (`ValueFileHeader.stamp`).
        let head: [UInt8]
        /// Where the rest of the file (deflate data and trailer) lies in the spool.
        let offset: Int
        let length: Int
        /// The value's own size (decompressed), and its stored size (the whole file).
        let size: Int64
        var stored: Int64 { Int64(head.count + length) }
        let contentType: String
        let expires: Int64?
        let attributes: [UInt8]?
    }

    private let file: SpoolFile
    private(set) var entries: [Entry] = []
    /// Set when an append failed part way: the file's write position is no
    /// longer its recorded size, so nothing more may be appended.
    private var broken = false
    /// Bytes copied at a time from an upload into the spool.
    private static let copyChunk = 1 << 20

    init(directory: String) throws {
        file = try SpoolFile(directory: directory)
    }

    deinit { file.close() }

    /// Appends a completed upload's value file; `read(offset, count)`
    /// reads the upload's file (from memory or its own spool).
    func append(_ upload: ValueUpload, read: (_ offset: Int, _ count: Int) throws -> [UInt8]) throws {
        guard !broken else { throw StoreError.corrupt(path: file.path, reason: "an earlier value was not staged whole") }
        let head = upload.header(version: 0, modifiedNanos: 0)
        let offset = file.size
        let end = Int(upload.written)
        var at = upload.headerLength
        do {
            while at < end {
                let n = min(Self.copyChunk, end - at)
                try file.append(read(at, n))
                at += n
            }
        } catch {
            broken = true
            throw error
        }
        let meta = upload.metadata
        entries.append(Entry(key: upload.key.string, head: head, offset: offset, length: end - upload.headerLength,
                             size: Int64(meta.size), contentType: meta.contentType, expires: meta.expiresNanos,
                             attributes: meta.attributes))
    }

    /// `count` bytes of `entry`'s file after its header, from `offset`.
    func bytes(of entry: Entry, at offset: Int, count: Int) throws -> [UInt8] {
        try SpoolFile.read(file.fd, at: entry.offset + offset, count: count, path: file.path)
    }

    /// Each key's last staged value, in the order those were staged: what
    /// the restore publishes (a key staged twice ends as its last value says).
    func latest() -> [Entry] {
        // By the key's bytes: `String` equality folds canonically
        // equivalent keys (`é` and `e` + U+0301), which are two keys here.
        var last: [[UInt8]: Int] = [:]
        for (i, entry) in entries.enumerated() { last[Array(entry.key.utf8)] = i }
        return entries.enumerated().filter { last[Array($0.element.key.utf8)] == $0.offset }.map(\.element)
    }

    /// Drops the file (its bytes go with its descriptor).
    func close() { file.close() }
}
