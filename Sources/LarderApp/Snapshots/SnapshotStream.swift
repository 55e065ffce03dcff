import LarderHTTP
import LarderRouting
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// The body of `GET /snapshot`: one `SnapshotLine` per value under a
/// prefix, in key byte order, made as the connection pulls it.
///
/// Memory is bounded whatever the store holds: a page of at most
/// `pageSize` key names, one value of at most `SnapshotLine.maxInlineValue`
/// (and its line), or for a larger value a 48 KiB read buffer and the
/// 64 KiB of base64 made from it. The HTTP layer pulls only while the socket
/// drains, so a slow reader holds the stream, not the data.
///
/// The snapshot is not a point-in-time copy: each value is read as it is
/// when its turn comes. A key deleted after it was listed is left out; a
/// value read is always one whole version (an open file is never mixed with
/// a later write).
///
/// Used by one thread at a time (the connection's loop).
final class SnapshotStream: HTTPBodyStream {
    static let pageSize = 1000
    /// Bytes of a large value encoded at a time: a multiple of 3, so every
    /// piece but the last encodes without padding.
    static let base64Piece = 48 * 1024

    private let store: any ValueStore
    private let prefix: StorePrefix
    private let logger: Logger

    /// Keys listed and not yet written, and where the next page starts.
    private var page: [String] = []
    private var pageIndex = 0
    private var after: String?
    private var listingEnded = false

    /// Bytes made and not yet handed to the connection.
    private var pending: [UInt8] = []
    private var pendingStart = 0

    /// A large value being written as base64, and its unencoded bytes.
    private var large: ValueByteStream?
    private var raw: UnsafeMutableRawBufferPointer?
    private var rawCount = 0

    init(store: any ValueStore, prefix: StorePrefix, logger: Logger) {
        self.store = store
        self.prefix = prefix
        self.logger = logger
    }

    deinit {
        close()
        raw?.deallocate()
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            if pendingStart < pending.count {
                let n = min(buffer.count, pending.count - pendingStart)
                pending.withUnsafeBytes { bytes in
                    buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + pendingStart, byteCount: n)
                }
                pendingStart += n
                if pendingStart == pending.count {
                    // Keep a line-sized buffer; let go of a 1 MiB one.
                    pending.removeAll(keepingCapacity: pending.capacity <= 256 * 1024)
                    pendingStart = 0
                }
                return n
            }
            if let large {
                try encodeMore(of: large)
                continue
            }
            guard let key = try nextKey() else { return 0 }
            try begin(key)
        }
    }

    func close() {
        large?.close()
        large = nil
    }

    /// The next listed key; a page is listed when the last one is used up.
    private func nextKey() throws -> String? {
        if pageIndex == page.count {
            guard !listingEnded else { return nil }
            let listing = try store.list(prefix: prefix, after: after, limit: Self.pageSize, groupByDirectory: false).get()
            page = listing.values.map(\.key)
            pageIndex = 0
            after = listing.next
            listingEnded = listing.next == nil
            if page.isEmpty { return nil }
        }
        defer { pageIndex += 1 }
        return page[pageIndex]
    }

    /// Starts the line of `key`: whole when the value is small, else its
    /// head and the start of the base64, the rest made by `encodeMore`.
    private func begin(_ key: String) throws {
        let value: StoredValue
        do {
            value = try store.open(try StoreKey(key)).get()
        } catch StoreError.notFound {
            return  // deleted (or expired) since it was listed
        }
        let meta = value.metadata
        pending += SnapshotLine.header(meta)
        if meta.size <= UInt64(SnapshotLine.maxInlineValue) {
            defer { value.close() }
            pending += SnapshotLine.valueMember(try value.readAll(), contentType: meta.contentType)
        } else {
            pending += SnapshotLine.base64Start
            large = try value.identityStream()
            if raw == nil { raw = .allocate(byteCount: Self.base64Piece, alignment: 16) }
            rawCount = 0
        }
    }

    /// Reads up to a piece of the large value and encodes it; at its end,
    /// the rest (padded) and the end of the line.
    private func encodeMore(of stream: ValueByteStream) throws {
        let raw = self.raw!
        var ended = false
        while rawCount < raw.count {
            let n = try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[rawCount...]))
            if n == 0 { ended = true; break }
            rawCount += n
        }
        let whole = ended ? rawCount : rawCount / 3 * 3
        Base64.encode(UnsafeRawBufferPointer(rebasing: raw[0..<whole]), into: &pending)
        // Carry the 0–2 bytes that do not make a group to the next piece.
        let carry = rawCount - whole
        if carry > 0 { raw.baseAddress!.copyMemory(from: raw.baseAddress! + whole, byteCount: carry) }
        rawCount = carry
        if ended {
            pending += SnapshotLine.base64End
            stream.close()
            large = nil
        }
    }
}
