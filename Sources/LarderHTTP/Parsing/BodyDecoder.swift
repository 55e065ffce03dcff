import LarderSupport

/// Frames a request body: a fixed Content-Length, or chunked transfer
/// coding decoded incrementally (RFC 9112 7.1), with the body limit enforced
/// on the decoded size.
package struct BodyDecoder {
    private enum State {
        case fixed(remaining: Int64)
        case chunkSize(value: Int64, digits: Int)
        /// Whitespace after the size: only more of it, `;` or the line end may follow.
        case chunkSizeBWS
        case chunkExtension
        case chunkSizeLF
        case chunkData(remaining: Int64)
        case chunkDataCR
        case chunkDataLF
        case trailerLineStart
        case trailerLine
        case trailerLineLF(empty: Bool)
        case done
    }

    private var state: State
    private let maxBytes: Int64
    private let maxLineBytes = 4096
    private var lineBytes = 0
    private var trailerBytes = 0
    /// The trailer line being read (bounded by `maxTrailerBytes`).
    private var trailerLine: [UInt8] = []
    private let maxTrailerBytes: Int
    package private(set) var received: Int64 = 0

    package init(contentLength: Int64, maxBytes: Int64) {
        state = contentLength == 0 ? .done : .fixed(remaining: contentLength)
        self.maxBytes = maxBytes
        self.maxTrailerBytes = 0
    }

    package init(chunkedWithMaxBytes maxBytes: Int64, maxTrailerBytes: Int) {
        state = .chunkSize(value: 0, digits: 0)
        self.maxBytes = maxBytes
        self.maxTrailerBytes = maxTrailerBytes
    }

    package var isDone: Bool { if case .done = state { return true } else { return false } }

    private static func bad(_ message: String) -> HTTPError {
        HTTPError(.badRequest, .badRequest, message, closeConnection: true)
    }

    /// Decodes from `input`, handing body bytes to `emit`. Returns how many
    /// input bytes were used; stops at the end of the body.
    package mutating func decode(_ input: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) throws -> Void) throws -> Int {
        var i = 0
        while i < input.count {
            switch state {
            case .done:
                return i
            case .fixed(let remaining):
                let n = Int(min(Int64(input.count - i), remaining))
                try emit(UnsafeRawBufferPointer(rebasing: input[i..<(i + n)]))
                i += n
                state = remaining - Int64(n) == 0 ? .done : .fixed(remaining: remaining - Int64(n))
            case .chunkData(let remaining):
                let n = Int(min(Int64(input.count - i), remaining))
                try emit(UnsafeRawBufferPointer(rebasing: input[i..<(i + n)]))
                i += n
                state = remaining - Int64(n) == 0 ? .chunkDataCR : .chunkData(remaining: remaining - Int64(n))
            default:
                try step(input[i])
                i += 1
            }
        }
        return i
    }

    /// One framing byte of the chunked coding.
    private mutating func step(_ c: UInt8) throws {
        switch state {
        case .chunkSize(let value, let digits):
            lineBytes += 1
            if lineBytes > maxLineBytes { throw Self.bad("a chunk size line is too long") }
            if let h = HexDigit.value(c) {
                // At most 15 significant hex digits (below 2^60, so the sum
                // of sizes cannot overflow); leading zeros are only length,
                // bounded by the line limit above.
                guard value < 1 << 56 else { throw Self.bad("a chunk size is too large") }
                state = .chunkSize(value: value << 4 | Int64(h), digits: digits + 1)
            } else if digits > 0 && c == 0x3B {
                pendingSize = value
                state = .chunkExtension
            } else if digits > 0 && (c == 0x20 || c == 0x09) {
                // BWS before a chunk-ext (RFC 9112 7.1.1); `1 0` is not size 1.
                pendingSize = value
                state = .chunkSizeBWS
            } else if digits > 0 && c == 0x0D {
                pendingSize = value
                state = .chunkSizeLF
            } else if digits > 0 && c == 0x0A {
                try endSizeLine(value)
            } else {
                throw Self.bad("a chunk size line is malformed")
            }
        case .chunkSizeBWS:
            lineBytes += 1
            if lineBytes > maxLineBytes { throw Self.bad("a chunk size line is too long") }
            if c == 0x3B { state = .chunkExtension } else if c == 0x0D { state = .chunkSizeLF }
            else if c == 0x0A { try endSizeLine(pendingSize) }
            else if c != 0x20 && c != 0x09 { throw Self.bad("a chunk size line is malformed") }
        case .chunkExtension:
            lineBytes += 1
            if lineBytes > maxLineBytes { throw Self.bad("a chunk extension is too long") }
            if c == 0x0D { state = .chunkSizeLF } else if c == 0x0A { try endSizeLine(pendingSize) }
            else if c < 0x20 && c != 0x09 { throw Self.bad("a chunk extension contains a control character") }
        case .chunkSizeLF:
            guard c == 0x0A else { throw Self.bad("a chunk size line has a bare CR") }
            try endSizeLine(pendingSize)
        case .chunkDataCR:
            if c == 0x0D { state = .chunkDataLF } else if c == 0x0A { state = .chunkSize(value: 0, digits: 0) }
            else { throw Self.bad("chunk data is longer than its size") }
        case .chunkDataLF:
            guard c == 0x0A else { throw Self.bad("chunk data is not followed by CRLF") }
            state = .chunkSize(value: 0, digits: 0)
        case .trailerLineStart:
            if c == 0x0D { state = .trailerLineLF(empty: true) } else if c == 0x0A { state = .done }
            else { try countTrailer(); trailerLine.append(c); state = .trailerLine }
        case .trailerLine:
            try countTrailer()
            if c == 0x0D { state = .trailerLineLF(empty: false) }
            else if c == 0x0A { try endTrailerLine() }
            else { trailerLine.append(c) }
        case .trailerLineLF(let empty):
            guard c == 0x0A else { throw Self.bad("a trailer line has a bare CR") }
            if empty { state = .done } else { try endTrailerLine() }
        case .fixed, .chunkData, .done:
            break
        }
    }

    /// The size parsed so far; kept while skipping an extension.
    private var pendingSize: Int64 = 0

    private mutating func endSizeLine(_ size: Int64) throws {
        lineBytes = 0
        if size == 0 {
            state = .trailerLineStart
            return
        }
        received += size
        if received > maxBytes {
            throw HTTPError(.payloadTooLarge, .payloadTooLarge, "the body is larger than \(maxBytes) bytes", closeConnection: true)
        }
        state = .chunkData(remaining: size)
    }

    /// A trailer line is complete: it must be a field line, as a header
    /// line must (its fields are not kept: nothing here uses them).
    private mutating func endTrailerLine() throws {
        defer { trailerLine.removeAll(keepingCapacity: true) }
        _ = try trailerLine.withUnsafeBytes { try HTTPFieldLine.parse($0, from: 0, to: $0.count, what: "trailer") }
        state = .trailerLineStart
    }

    private mutating func countTrailer() throws {
        trailerBytes += 1
        if trailerBytes > maxTrailerBytes {
            throw HTTPError(.headersTooLarge, .headersTooLarge, "the chunked trailer section is too large", closeConnection: true)
        }
    }
}
