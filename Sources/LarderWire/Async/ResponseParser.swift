/// Where a `ResponseParser` hands what it reads.
public protocol ResponseSink: AnyObject {
    /// The final (non-1xx) head, once.
    func responseHead(_ head: ResponseHead)
    /// The next piece of the body (chunked coding already removed). The
    /// bytes are only valid during the call.
    func responseBody(_ bytes: UnsafeRawBufferPointer)
}

/// Reads one HTTP/1.1 response from bytes as they arrive, however they are
/// cut: the head, then a body framed by `Content-Length`, chunked coding or
/// the connection's close (RFC 9112 §6.3). Interim 1xx heads are skipped.
public struct ResponseParser {
    private enum State {
        case head
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkEnd
        case trailers
        case untilClose
        case complete
    }

    /// The longest head accepted, as the server's own limit.
    public static let maximumHeadBytes = 64 * 1024

    private var state = State.head
    private let expectsBody: Bool
    /// Whether any byte of the answer has arrived.
    public private(set) var started = false
    public private(set) var head: ResponseHead?

    /// `expectsBody`: false for a HEAD request, whose answer has none.
    public init(expectsBody: Bool) {
        self.expectsBody = expectsBody
    }

    public var isComplete: Bool {
        if case .complete = state { return true }
        return false
    }

    /// Whether the body runs until the connection closes (the connection
    /// cannot be used again).
    public var readsUntilClose: Bool {
        if case .untilClose = state { return true }
        return false
    }

    /// Consumes what it can of `bytes` and returns how many it used; stops
    /// at the end of the response. Fewer than `bytes.count` with the
    /// response incomplete means the rest is a partial line: call again
    /// with more bytes after it.
    public mutating func consume(_ bytes: UnsafeRawBufferPointer, into sink: some ResponseSink) throws(WireFailure) -> Int {
        if !bytes.isEmpty { started = true }
        var offset = 0
        while offset < bytes.count {
            switch state {
            case .complete:
                return offset
            case .head:
                guard let end = Self.headEnd(bytes, from: offset) else {
                    if bytes.count - offset >= Self.maximumHeadBytes { throw .malformed("a response head over 64 KiB") }
                    return offset
                }
                let head = try Self.parseHead(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
                offset = end
                if (100...199).contains(head.status) && head.status != 101 { continue }
                self.head = head
                sink.responseHead(head)
                state = try bodyState(for: head)
            case .fixed(let remaining):
                let n = min(remaining, bytes.count - offset)
                sink.responseBody(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)]))
                offset += n
                state = remaining == n ? .complete : .fixed(remaining: remaining - n)
            case .untilClose:
                sink.responseBody(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                return bytes.count
            case .chunkSize:
                guard let (line, next) = Self.line(bytes, from: offset) else { return offset }
                offset = next
                guard let size = Self.chunkSize(line) else { throw .malformed("a bad chunk size line") }
                state = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkData(let remaining):
                let n = min(remaining, bytes.count - offset)
                sink.responseBody(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)]))
                offset += n
                state = remaining == n ? .chunkEnd : .chunkData(remaining: remaining - n)
            case .chunkEnd:
                guard let (line, next) = Self.line(bytes, from: offset) else { return offset }
                guard line.isEmpty else { throw .malformed("a chunk not followed by CRLF") }
                offset = next
                state = .chunkSize
            case .trailers:
                guard let (line, next) = Self.line(bytes, from: offset) else { return offset }
                offset = next
                if line.isEmpty { state = .complete }
            }
        }
        return offset
    }

    /// The connection closed: true when that ends the response (a body
    /// read until close), false when the response is cut short.
    public mutating func closed() -> Bool {
        if case .untilClose = state { state = .complete }
        return isComplete
    }

    private func bodyState(for head: ResponseHead) throws(WireFailure) -> State {
        if !expectsBody || head.status == 204 || head.status == 304 { return .complete }
        if let coding = head.value("Transfer-Encoding") {
            guard coding.lowercased().hasSuffix("chunked") else { return .untilClose }
            return .chunkSize
        }
        if let text = head.value("Content-Length") {
            let digits = text.filter { $0 != " " && $0 != "\t" }
            guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let length = Int(digits) else {
                throw .malformed("a bad Content-Length: \(text)")
            }
            return length == 0 ? .complete : .fixed(remaining: length)
        }
        return .untilClose
    }

    /// The index just past the blank line ending a head that starts at `from`.
    private static func headEnd(_ bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
        var i = from
        while i < bytes.count {
            if bytes[i] == 0x0A {
                if i + 1 < bytes.count, bytes[i + 1] == 0x0A { return i + 2 }
                if i + 2 < bytes.count, bytes[i + 1] == 0x0D, bytes[i + 2] == 0x0A { return i + 3 }
            }
            i += 1
        }
        return nil
    }

    /// One line (without its CRLF or LF) and the index after it.
    private static func line(_ bytes: UnsafeRawBufferPointer, from: Int) -> (UnsafeRawBufferPointer, Int)? {
        var i = from
        while i < bytes.count, bytes[i] != 0x0A { i += 1 }
        guard i < bytes.count else { return nil }
        let end = i > from && bytes[i - 1] == 0x0D ? i - 1 : i
        return (UnsafeRawBufferPointer(rebasing: bytes[from..<end]), i + 1)
    }

    private static func chunkSize(_ line: UnsafeRawBufferPointer) -> Int? {
        var size = 0
        var digits = 0
        for byte in line {
            let value: Int
            switch byte {
            case 0x30...0x39: value = Int(byte - 0x30)
            case 0x41...0x46: value = Int(byte - 0x41 + 10)
            case 0x61...0x66: value = Int(byte - 0x61 + 10)
            case 0x3B, 0x20, 0x09: return digits > 0 ? size : nil   // an extension or whitespace follows
            default: return nil
            }
            guard digits < 15 else { return nil }
            size = size << 4 | value
            digits += 1
        }
        return digits > 0 ? size : nil
    }

    private static func parseHead(_ bytes: UnsafeRawBufferPointer) throws(WireFailure) -> ResponseHead {
        var offset = 0
        guard let (statusLine, afterStatus) = line(bytes, from: 0) else { throw .malformed("no status line") }
        offset = afterStatus
        // "HTTP/1.1 200 OK": the version, a space, three digits.
        guard statusLine.count >= 12, statusLine.starts(with: "HTTP/1.".utf8), statusLine[8] == 0x20,
              statusLine[9..<12].allSatisfy({ (0x30...0x39).contains($0) }),
              let status = Int(String(decoding: UnsafeRawBufferPointer(rebasing: statusLine[9..<12]), as: UTF8.self)) else {
            throw .malformed("not an HTTP/1.x status line: \(String(decoding: statusLine.prefix(80), as: UTF8.self))")
        }
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(12)
        while let (field, next) = line(bytes, from: offset), !field.isEmpty {
            offset = next
            guard let colon = field.firstIndex(of: 0x3A) else { throw .malformed("a header line without a colon") }
            var start = colon + 1
            var end = field.count
            while start < end, field[start] == 0x20 || field[start] == 0x09 { start += 1 }
            while end > start, field[end - 1] == 0x20 || field[end - 1] == 0x09 { end -= 1 }
            headers.append((String(decoding: UnsafeRawBufferPointer(rebasing: field[..<colon]), as: UTF8.self),
                            String(decoding: UnsafeRawBufferPointer(rebasing: field[start..<end]), as: UTF8.self)))
        }
        return ResponseHead(status: status, headers: headers, isHTTP10: statusLine[7] == 0x30)
    }
}
