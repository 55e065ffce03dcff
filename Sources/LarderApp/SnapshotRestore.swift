import LarderModel
import LarderHTTP
import LarderJSON
import LarderStorage
import LarderValueFile
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// The body of `POST /snapshot`: restores each `SnapshotLine` as it
/// arrives, then answers `{"restored": N, "skipped": M}`.
///
/// A line is held whole and read with the strict JSON parser, members in
/// any order, up to `maxBufferedLine` bytes. A line whose value member comes
/// last (as `GET /snapshot` writes them) is streamed once `streamAfter`
/// bytes of it are buffered: the members before the value are read, the
/// store write begins, and the value is decoded into it piece by piece — a
/// 1 GiB value restores in the memory of a few socket reads. A line longer
/// than `maxBufferedLine` must be of that kind.
///
/// Invariants:
/// - every value is one store write, published only when its line is
///   complete and valid: a failure never leaves a torn or partial value;
/// - lines are applied in order and the first bad one stops the restore;
///   those before it stay restored, and the error says how many;
/// - with `replace`, the prefix is cleared when the first line has been
///   found valid (for a long line: its members before the value), or at the
///   end of an empty document; a document whose first line is bad leaves
///   the store as it was.
///
/// Used by one thread at a time (the connection's queue).
final class SnapshotRestore: HTTPRequestBodySink {
    static let maxBufferedLine = 4 << 20
    static let streamAfter = 1 << 20

    private let store: any ValueStore
    private let prefix: StorePrefix
    /// The prefix still has to be cleared before the first value is written.
    private var clearPending: Bool
    private let maxValueBytes: Int64
    private let responder: HTTPResponder
    private let logger: Logger

    /// The line being read (not yet complete), when it is buffered.
    private var line: [UInt8] = []
    /// 1-based number of the line being read.
    private var lineNumber = 1
    /// The buffered line was looked at for streaming (at `streamAfter`).
    private var lineChecked = false
    private var restored = 0
    private var skipped = 0

    /// A long line whose value is being decoded into the store.
    private final class StreamedLine {
        enum Phase {
            /// Inside the value string.
            case value
            /// After the string: only whitespace, then the object's `}`.
            case afterValue
            /// After the `}`: only whitespace, then the line's end.
            case afterObject
        }
        var decoder: SnapshotValueDecoder
        /// nil when the value is read only to be skipped (already expired).
        let writer: ValueWriter?
        var phase = Phase.value

        init(decoder: SnapshotValueDecoder, writer: ValueWriter?) {
            self.decoder = decoder
            self.writer = writer
        }
    }
    private var streamed: StreamedLine?

    init(store: any ValueStore, prefix: StorePrefix, replace: Bool, maxValueBytes: Int64,
         responder: HTTPResponder, logger: Logger) {
        self.store = store
        self.prefix = prefix
        self.clearPending = replace
        self.maxValueBytes = maxValueBytes
        self.responder = responder
        self.logger = logger
    }

    // MARK: - HTTPRequestBodySink

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        do {
            try consume(chunk)
        } catch {
            abort()
            throw httpError(error)
        }
    }

    func finish() {
        do {
            if let streamed {
                guard streamed.phase == .afterObject else { throw SnapshotLineError("the document ends inside this line") }
                try finishStreamed()
            } else if !line.isEmpty {
                // The last line needs no line feed.
                try restoreBuffered()
                line = []
            }
            try clearIfPending()
            responder.respond(.json(.ok, RestoreCount(restored: restored, skipped: skipped)))
        } catch {
            abort()
            responder.respond(httpError(error).response)
        }
    }

    func abort() {
        streamed?.writer?.abort()
        streamed = nil
        line = []
    }

    // MARK: - Lines

    private func consume(_ chunk: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < chunk.count {
            let rest = UnsafeRawBufferPointer(rebasing: chunk[offset...])
            if streamed != nil {
                offset += try feedStreamed(rest)
                continue
            }
            if let found = memchr(rest.baseAddress!, 0x0A, rest.count) {
                let length = UnsafeRawPointer(found) - rest.baseAddress!
                line.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest[0..<length]))
                offset += length + 1
                try restoreBuffered()
                line.removeAll(keepingCapacity: line.capacity <= 64 * 1024)
                lineNumber += 1
                lineChecked = false
            } else {
                line.append(contentsOf: rest)
                offset = chunk.count
                if line.count > Self.maxBufferedLine {
                    _ = try beginStreamed(required: true)
                } else if line.count > Self.streamAfter && !lineChecked {
                    lineChecked = true
                    _ = try beginStreamed(required: false)
                }
            }
        }
    }

    /// Restores the complete line in `line`.
    private func restoreBuffered() throws {
        try line.withUnsafeBytes { (bytes) throws in
            let start = JSONObjectScanner.skipWhitespace(bytes, 0)
            if start == bytes.count { return }  // a blank line
            let members: [JSONObjectScanner.Member]
            switch try scan(bytes) {
            case .complete(let found, let end):
                guard JSONObjectScanner.skipWhitespace(bytes, end) == bytes.count else {
                    throw SnapshotLineError("something follows the object on the line")
                }
                members = found
            case .partial:
                throw SnapshotLineError("the line ends inside its object")
            }
            let header = try SnapshotLine.Header(members, in: bytes, prefix: prefix, valueFollows: false)
            let value = try Self.valueBytes(header, bytes)
            guard value.count <= maxValueBytes else {
                throw SnapshotLineError("the value is larger than \(maxValueBytes) bytes", tooLarge: true)
            }
            if isExpired(header) {
                try clearIfPending()
                skipped += 1
                return
            }
            let writer = try beginUpload(header)
            do {
                try value.withUnsafeBytes { try writer.write($0) }
                _ = try writer.finish()
            } catch {
                writer.abort()
                throw error
            }
            restored += 1
        }
    }

    /// The value of a buffered line, from its parsed value member.
    private static func valueBytes(_ header: SnapshotLine.Header, _ line: UnsafeRawBufferPointer) throws -> [UInt8] {
        let (member, range, parsed) = header.value!
        switch (member, parsed) {
        case (.json, _):
            // Verbatim: the bytes parsed as JSON, and are kept as they are.
            return Array(UnsafeRawBufferPointer(rebasing: line[range]))
        case (.text, .string(let text)):
            return Array(text.utf8)
        case (.base64, .string(let text)):
            do {
                var text = text
                return try text.withUTF8 { try Base64.decode(UnsafeRawBufferPointer($0)) }
            } catch {
                throw SnapshotLineError("\(error)")
            }
        default:
            preconditionFailure("Header checked that text and base64 are strings")
        }
    }

    /// When the buffered part of a long line holds everything up to the
    /// start of its value as a `text` or `base64` string (the members before
    /// are small): reads them, starts the write, decodes the rest of the
    /// line into it from here on, and returns true. Otherwise the line stays
    /// buffered (false), unless streaming is `required` (the line is over
    /// `maxBufferedLine`): then why it cannot be is thrown.
    private func beginStreamed(required: Bool) throws -> Bool {
        let streaming = try line.withUnsafeBytes { (bytes) throws -> Bool in
            let found: (members: [JSONObjectScanner.Member], member: SnapshotLine.ValueMember, valueStart: Int)?
            if case .partial(let members, let open?) = try scan(bytes),
               let member = SnapshotLine.ValueMember(rawValue: open.name), member != .json,
               bytes[open.valueStart] == UInt8(ascii: "\"") {
                found = (members, member, open.valueStart)
            } else {
                found = nil
            }
            guard let found else {
                guard required else { return false }
                throw SnapshotLineError("the line is longer than \(Self.maxBufferedLine) bytes; such a line must end with its value as a \"text\" or \"base64\" string")
            }
            let header: SnapshotLine.Header
            do {
                header = try SnapshotLine.Header(found.members, in: bytes, prefix: prefix, valueFollows: true)
            } catch {
                // Perhaps a member after the value (`key` last): fine while the line may still be buffered.
                guard required else { return false }
                throw error
            }
            let writer = isExpired(header) ? nil : try beginUpload(header)
            if writer == nil { try clearIfPending() }
            streamed = StreamedLine(decoder: SnapshotValueDecoder(found.member, maxBytes: maxValueBytes), writer: writer)
            // No line feed in the buffer (else it would have been a whole
            // line), so this cannot end the line.
            var offset = found.valueStart + 1
            while offset < bytes.count {
                offset += try feedStreamed(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            }
            return true
        }
        if streaming { line = [] }
        return streaming
    }

    /// Feeds the rest of a long line; returns how many bytes it took (up to
    /// and including the line feed that ends it).
    private func feedStreamed(_ input: UnsafeRawBufferPointer) throws -> Int {
        let s = streamed!
        switch s.phase {
        case .value:
            let used = try s.decoder.decode(input) { try s.writer?.write($0) }
            if s.decoder.isEnded { s.phase = .afterValue }
            return used
        case .afterValue:
            for (i, byte) in input.enumerated() {
                switch byte {
                case 0x20, 0x09, 0x0D, 0x0A: continue
                case UInt8(ascii: "}"):
                    s.phase = .afterObject
                    return i + 1
                default:
                    throw SnapshotLineError("in a line over \(Self.maxBufferedLine) bytes the value member must come last")
                }
            }
            return input.count
        case .afterObject:
            for (i, byte) in input.enumerated() {
                switch byte {
                case 0x20, 0x09, 0x0D: continue
                case 0x0A:
                    try finishStreamed()
                    return i + 1
                default:
                    throw SnapshotLineError("something follows the object on the line")
                }
            }
            return input.count
        }
    }

    /// The long line ended well: publish its value (or count it skipped).
    private func finishStreamed() throws {
        let s = streamed!
        streamed = nil
        lineChecked = false
        if let writer = s.writer {
            _ = try writer.finish()
            restored += 1
        } else {
            skipped += 1
        }
        lineNumber += 1
    }

    // MARK: - Helpers

    private func scan(_ bytes: UnsafeRawBufferPointer) throws -> JSONObjectScanner.Result {
        do {
            return try JSONObjectScanner.scan(bytes)
        } catch {
            throw SnapshotLineError("the line is not a JSON object: \(error.message)")
        }
    }

    private func isExpired(_ header: SnapshotLine.Header) -> Bool {
        header.expiresNanos.map { $0 <= Clock.nowNanos() } ?? false
    }

    /// `?replace=1`: clears the prefix once, before the first value is written.
    private func clearIfPending() throws {
        guard clearPending else { return }
        clearPending = false
        _ = try store.deletePrefix(prefix)
    }

    private func beginUpload(_ header: SnapshotLine.Header) throws -> ValueWriter {
        try clearIfPending()
        do {
            return try store.beginUpload(key: header.key, contentType: header.contentType, encoding: .identity,
                                         expiresNanos: header.expiresNanos, condition: nil)
        } catch StoreError.invalidContentType(let why) {
            throw SnapshotLineError("the content type cannot be stored: \(why)")
        }
    }

    /// The answer for a failed line: the line number, why, and what was done before it.
    private func httpError(_ error: any Error) -> HTTPError {
        let done = "the lines before it were applied: \(restored) restored, \(skipped) skipped (expired)"
        guard let e = error as? SnapshotLineError else {
            let mapped = ErrorMapping.httpError(error, logger: logger, context: "POST /snapshot line \(lineNumber)")
            return HTTPError(mapped.status, mapped.code, "line \(lineNumber): \(mapped.message); \(done)",
                             headers: mapped.headers, closeConnection: mapped.closeConnection)
        }
        if e.tooLarge {
            return HTTPError(.payloadTooLarge, .payloadTooLarge, "line \(lineNumber): \(e.message); \(done)", closeConnection: true)
        }
        return HTTPError(.badRequest, .invalidSnapshot, "line \(lineNumber): \(e.message); \(done)")
    }
}
