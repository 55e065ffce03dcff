import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The result of a finished write.
public struct PutOutcome: Sendable {
    /// true: the key is new (201); false: it replaced a value (204).
    public let created: Bool
    public let metadata: ValueMetadata
}

/// One value being written: the body streams through here into a temp file
/// in the key's directory, then `finish` fsyncs and publishes it.
///
/// Used by one thread at a time (the connection's queue); not Sendable.
public final class ValueUpload {
    public enum Encoding: Sendable {
        /// The body is the value; the store compresses it.
        case identity
        /// The body is gzip already: verified, then kept as sent.
        case gzip
    }

    /// Output is written to the file in pieces of about this size.
    static let flushThreshold = 256 * 1024

    private let store: DiskStore
    public let key: StoreKey
    private var metadata: ValueMetadata
    private let encoding: Encoding
    private let tempPath: String
    private var fd: Int32
    /// Bytes not yet written; begins with the header placeholder until the
    /// first flush.
    private var pending: [UInt8] = []
    private var flushedAny = false
    private var headerLength = 0
    private var size: UInt64 = 0
    private var crc: UInt32 = 0
    private var deflater: Deflater?
    private var inflater: Inflater?
    /// gzip mode: the client's first header, until it is complete.
    private var clientHeader: [UInt8]? = nil
    private var scratch: UnsafeMutableRawBufferPointer?
    private var done = false

    init(store: DiskStore, key: StoreKey, metadata: ValueMetadata, encoding: Encoding, tempPath: String, fd: Int32) throws {
        self.store = store
        self.key = key
        self.metadata = metadata
        self.encoding = encoding
        self.tempPath = tempPath
        self.fd = fd
        switch encoding {
        case .identity:
            do { deflater = try store.zlib.deflater() } catch { abort(); throw error }
            reserveHeader()
        case .gzip:
            do { inflater = try store.zlib.inflater() } catch { abort(); throw error }
            clientHeader = []
            scratch = .allocate(byteCount: 1 << 16, alignment: 16)
        }
    }

    deinit {
        abort()
        scratch?.deallocate()
    }

    private func reserveHeader() {
        let header = ValueFileHeader.encode(metadata)
        headerLength = header.count
        pending.reserveCapacity(Self.flushThreshold + 65_536)
        pending.append(contentsOf: header)
    }

    /// Feeds the next piece of the body.
    public func write(_ chunk: UnsafeRawBufferPointer) throws {
        guard !done, chunk.count > 0 else { return }
        switch encoding {
        case .identity:
            crc = CRC32.update(crc, chunk)
            size += UInt64(chunk.count)
            try deflater!.compress(chunk, finish: false, into: &pending)
        case .gzip:
            try verify(chunk)
            if clientHeader != nil {
                clientHeader!.append(contentsOf: chunk)
                guard case .complete(let length) = try GzipMemberHeader.parse(clientHeader!) else {
                    if clientHeader!.count > ValueFileHeader.maxVariableBytes - 2048 {
                        throw StoreError.invalidGzip("the gzip header is larger than 60 KiB")
                    }
                    return
                }
                let all = clientHeader!
                clientHeader = nil
                metadata.originalGzipHeader = Array(all[0..<length])
                reserveHeader()
                pending.append(contentsOf: all[length...])
            } else {
                pending.append(contentsOf: chunk)
            }
        }
        if pending.count >= Self.flushThreshold { try flush() }
    }

    /// Inflates gzip input only to check it and count the value's size.
    private func verify(_ chunk: UnsafeRawBufferPointer) throws {
        var produced: UInt64 = 0
        try inflater!.inflate(chunk, scratch: scratch!) { piece in produced += UInt64(piece.count) }
        size += produced
    }

    private func flush() throws {
        try pending.withUnsafeBytes { (raw) in try POSIX.writeAll(fd, raw, path: tempPath) }
        pending.removeAll(keepingCapacity: true)
        flushedAny = true
    }

    /// Ends the body: completes the file, fsyncs it and publishes it.
    public func finish() throws -> PutOutcome {
        guard !done else { throw StoreError.corrupt(path: tempPath, reason: "upload finished twice") }
        defer { abort() }
        switch encoding {
        case .identity:
            try deflater!.compress(UnsafeRawBufferPointer(start: nil, count: 0), finish: true, into: &pending)
            ValueFileHeader.appendLE(&pending, UInt64(crc), bytes: 4)
            ValueFileHeader.appendLE(&pending, size & 0xFFFF_FFFF, bytes: 4)
        case .gzip:
            if clientHeader != nil || !inflater!.isComplete {
                throw StoreError.invalidGzip(clientHeader?.isEmpty ?? false ? "the body is empty" : "the gzip data ends early")
            }
        }
        metadata.size = size
        metadata.version = store.nextVersion()
        metadata.modifiedNanos = DiskStore.nowNanos()
        let header = ValueFileHeader.encode(metadata)
        precondition(header.count == headerLength, "header length changed")
        if flushedAny {
            try flush()
            try header.withUnsafeBytes { (raw) in try POSIX.pwriteAll(fd, raw, at: 0, path: tempPath) }
        } else {
            pending.replaceSubrange(0..<headerLength, with: header)
            try flush()
        }
        if store.options.fsync { try POSIX.fsync(fd, path: tempPath) }
        let created = try store.publish(tempPath: tempPath, fd: fd, key: key)
        done = true
        return PutOutcome(created: created, metadata: metadata)
    }

    /// Drops the upload: closes and removes the temp file. Safe to call twice.
    public func abort() {
        if let d = deflater { store.zlib.recycle(d); deflater = nil }
        if let i = inflater { store.zlib.recycle(i); inflater = nil }
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
            if !done { unlink(tempPath) }
        }
        done = true
    }
}
