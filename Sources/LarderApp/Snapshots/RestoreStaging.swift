import FoundationEssentials
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// A snapshot document held aside until all of it has been read and found
/// valid, then applied to the store: a restore is all or nothing (docs/http-api.md,
/// Snapshots). Nothing reaches the store, its watchers or its change feed
/// while the document is read; a bad line anywhere leaves the store exactly
/// as it was, `replace=1` included.
///
/// Every staged line is one record in one unlinked spool file in the temp
/// directory (`TMPDIR`), so memory stays a few buffers whatever the
/// document holds (a 1 GiB value, or a million keys):
///
///     keyLength(u16) contentTypeLength(u16) hasExpiry(u8) expiresNanos(i64)
///     valueLength(i64) attributesLength(u16, 0xFFFF: none)
///     key contentType attributes value                   (little-endian)
///
/// A streamed value's length is written over its placeholder when the
/// value ends. The file has no name from the moment it is made, so nothing
/// is left behind however the process ends.
///
/// Used by one thread at a time: the connection's loop while the body is
/// read, then the thread `apply` runs on (it is handed over).
final class RestoreStaging: @unchecked Sendable {
    /// Values staged (lines that will be restored).
    private(set) var staged = 0
    /// Lines whose `expires` had passed: counted, not restored.
    private(set) var skipped = 0

    private let directory: String
    private var fd: Int32 = -1
    private var size: Int64 = 0
    /// Where the value being streamed started, and its length field.
    private var open: (lengthAt: Int64, valueStart: Int64)?

    private static let fixedLength = 2 + 2 + 1 + 8 + 8 + 2
    /// Bytes read from the spool per write into the store.
    private static let chunk = 256 << 10

    init(directory: String = TemporaryDirectory.path) {
        self.directory = directory
    }

    deinit { discard() }

    // MARK: - Staging (the connection's loop)

    /// Stages one whole value.
    func add(_ header: SnapshotLine.Header, value: [UInt8]) throws {
        try begin(header)
        try value.withUnsafeBytes { try append($0) }
        try end()
    }

    /// Starts a value whose bytes follow through `append`; `end` closes it.
    func begin(_ header: SnapshotLine.Header) throws {
        precondition(open == nil, "one value at a time")
        // Checked now, so that applying cannot fail on it.
        do {
            try ValueMetadata.checkContentType(header.contentType)
        } catch StoreError.invalidContentType(let why) {
            throw SnapshotLineError("the content type cannot be stored: \(why)")
        }
        let key = header.key.bytes, type = Array(header.contentType.utf8), attributes = header.attributes ?? []
        var record = [UInt8]()
        record.reserveCapacity(Self.fixedLength + key.count + type.count + attributes.count)
        Self.put(UInt64(key.count), bytes: 2, into: &record)
        Self.put(UInt64(type.count), bytes: 2, into: &record)
        record.append(header.expiresNanos == nil ? 0 : 1)
        Self.put(UInt64(bitPattern: header.expiresNanos ?? 0), bytes: 8, into: &record)
        let lengthAt = size + Int64(record.count)
        Self.put(0, bytes: 8, into: &record)
        Self.put(header.attributes == nil ? 0xFFFF : UInt64(attributes.count), bytes: 2, into: &record)
        record += key
        record += type
        record += attributes
        try record.withUnsafeBytes { try append($0) }
        open = (lengthAt, size)
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        if fd < 0 { try makeFile() }
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(size))
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.io(operation: "write", path: directory + " (restore spool)", errno: errno)
            }
            done += n
            size += Int64(n)
        }
    }

    /// The streamed value is complete: its length goes into its record.
    func end() throws {
        let (lengthAt, valueStart) = open!
        open = nil
        var length: [UInt8] = []
        Self.put(UInt64(size - valueStart), bytes: 8, into: &length)
        try write(length, at: lengthAt)
        staged += 1
    }

    /// A line that expired before it was restored.
    func skip() { skipped += 1 }

    /// Lets go of the spool; nothing was applied. Safe to call more than once.
    func discard() {
        if fd >= 0 { close(fd); fd = -1 }
        open = nil
    }

    // MARK: - Applying (after the whole document was read)

    /// Where the next staged value starts.
    private var applied: Int64 = 0

    /// Streams the next staged value, in document order, into `restore`,
    /// and answers what finishing it answers; nil when every value was
    /// staged. (A key named twice ends as its last line says.)
    func stageNext(into restore: any RestoreTransaction) throws -> StoreReply<PutOutcome>? {
        guard applied < size else { return nil }
        var at = applied
        let fixed = try read(Self.fixedLength, at: at)
        let keyLength = Int(Self.get(fixed, 0, bytes: 2)), typeLength = Int(Self.get(fixed, 2, bytes: 2))
        let expires = fixed[4] == 1 ? Int64(bitPattern: Self.get(fixed, 5, bytes: 8)) : nil
        var left = Int64(bitPattern: Self.get(fixed, 13, bytes: 8))
        let attributesField = Int(Self.get(fixed, 21, bytes: 2))
        let attributesLength = attributesField == 0xFFFF ? 0 : attributesField
        let names = try read(keyLength + typeLength + attributesLength, at: at + Int64(Self.fixedLength))
        at += Int64(Self.fixedLength + names.count)
        let key = try StoreKey(String(decoding: names[0..<keyLength], as: UTF8.self))
        let writer = try restore.stage(key: key, contentType: String(decoding: names[keyLength..<(keyLength + typeLength)], as: UTF8.self),
                                       expiresNanos: expires)
        do {
            if attributesField != 0xFFFF { try writer.setAttributes(Array(names[(keyLength + typeLength)...])) }
            try writer.expect(bytes: left)
            var buffer = [UInt8](repeating: 0, count: Int(min(left, Int64(Self.chunk))))
            while left > 0 {
                let n = Int(min(left, Int64(buffer.count)))
                try buffer.withUnsafeMutableBytes { try readExactly(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<n]), at: at) }
                try buffer.withUnsafeBytes { try writer.write(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                at += Int64(n)
                left -= Int64(n)
            }
        } catch {
            writer.abort()
            throw error
        }
        applied = at
        return writer.finish()
    }

    // MARK: - The file

    private func makeFile() throws {
        var template = Array((directory.hasSuffix("/") ? directory : directory + "/").utf8CString.dropLast())
            + Array("larder-restore-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard made >= 0 else { throw StoreError.io(operation: "mkstemp", path: directory, errno: errno) }
        _ = fcntl(made, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        fd = made
    }

    private func write(_ bytes: [UInt8], at offset: Int64) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, $0.count - done, off_t(offset) + off_t(done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.io(operation: "write", path: directory + " (restore spool)", errno: errno)
            }
            done += n
        }
    }

    private func read(_ count: Int, at offset: Int64) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        try out.withUnsafeMutableBytes { try readExactly(into: $0, at: offset) }
        return out
    }

    private func readExactly(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.io(operation: "pread", path: directory + " (restore spool)", errno: errno)
            }
            if n == 0 { throw StoreError.corrupt(path: directory + " (restore spool)", reason: "the spool ends early") }
            done += n
        }
    }

    private static func put(_ value: UInt64, bytes: Int, into out: inout [UInt8]) {
        for i in 0..<bytes { out.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * i))) }
    }

    private static func get(_ bytes: [UInt8], _ at: Int, bytes count: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<count { value |= UInt64(bytes[at + i]) << UInt64(8 * i) }
        return value
    }
}
