import LarderModel
import LarderHTTP
import LarderRouting
import LarderJSON
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// The body of `POST /snapshot`: reads and checks each `SnapshotLine` as
/// it arrives, staging it (`RestoreStaging`), and once the whole document
/// is read and valid applies it, then answers `{"restored": N, "skipped": M}`.
///
/// A line is held whole and read with the strict JSON parser, members in
/// any order, up to `maxBufferedLine` bytes. A line whose value member comes
/// last (as `GET /snapshot` writes them) is streamed once `streamAfter`
/// bytes of it are buffered: the members before the value are read, and the
/// value is decoded into the staging spool piece by piece — a 1 GiB value
/// restores in the memory of a few socket reads. A line longer than
/// `maxBufferedLine` must be of that kind.
///
/// Invariants:
/// - all or nothing: the store is not touched until the last line has been
///   read and found valid, so a bad line anywhere (or a body that ends
///   early) leaves the store, its watchers and its change feed as they
///   were, `replace` included;
/// - then the values go to the store as one restore transaction, in
///   document order, published in one step (with `replace`, clearing the
///   prefix in the same step), all or nothing through failures and
///   crashes too: a reader sees the old set or the new one;
/// - applying goes on from wherever the store's answers come, with no
///   thread waiting for them (`RestoreApply`).
///
/// Used by one thread at a time (the connection's loop).
final class SnapshotRestore: HTTPRequestBodySink {
    static let maxBufferedLine = 4 << 20
    static let streamAfter = 1 << 20

    private let store: any ValueStore
    private let prefix: StorePrefix
    /// `?replace=1`: what is under the prefix and not restored goes, in the same step.
    private let replace: Bool
    /// The lines read so far, held aside until the document is whole.
    private let staging = RestoreStaging()
    private let maxValueBytes: Int64
    private let responder: HTTPResponder
    private let logger: Logger

    /// The line being read (not yet complete), when it is buffered.
    private var line: [UInt8] = []
    /// 1-based number of the line being read.
    private var lineNumber = 1
    /// The buffered line was looked at for streaming (at `streamAfter`).
    private var lineChecked = false

    /// A long line whose value is being decoded into the staging spool.
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
        /// false when the value is read only to be skipped (already expired).
        let staged: Bool
        var phase = Phase.value

        init(decoder: SnapshotValueDecoder, staged: Bool) {
            self.decoder = decoder
            self.staged = staged
        }
    }
    private var streamed: StreamedLine?

    init(store: any ValueStore, prefix: StorePrefix, replace: Bool, maxValueBytes: Int64,
         responder: HTTPResponder, logger: Logger) {
        self.store = store
        self.prefix = prefix
        self.replace = replace
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
        } catch {
            abort()
            responder.respond(httpError(error).response)
            return
        }
        // The whole document is valid: now, and only now, the store changes.
        let apply = RestoreApply(staging: staging, store: store, prefix: prefix, replace: replace,
                                 responder: responder, logger: logger)
        apply.run()
    }

    func abort() {
        staging.discard()
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
                staging.skip()
            } else {
                try staging.add(header, value: value)
            }
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
    /// are small): reads them, starts staging the value, decodes the rest of
    /// the line into it from here on, and returns true. Otherwise the line stays
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
            let staged = !isExpired(header)
            if staged { try staging.begin(header) }
            streamed = StreamedLine(decoder: SnapshotValueDecoder(found.member, maxBytes: maxValueBytes), staged: staged)
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
            let staging = self.staging
            let used = try s.decoder.decode(input) { if s.staged { try staging.append($0) } }
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

    /// The long line ended well: its value is staged (or counted skipped).
    private func finishStreamed() throws {
        let s = streamed!
        streamed = nil
        lineChecked = false
        if s.staged {
            try staging.end()
        } else {
            staging.skip()
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
        header.expiresNanos.map { $0 <= store.clock.nowNanos() } ?? false
    }

    /// The answer for a failed line: the line number, why, and that the store was not touched.
    private func httpError(_ error: any Error) -> HTTPError {
        let done = "nothing was applied (the store is as it was)"
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
