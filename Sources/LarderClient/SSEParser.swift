import Foundation

/// One Server-Sent Event as the stream spells it: the last `id:` seen, the
/// `event:` type (`message` when none) and the `data:` lines joined by `\n`.
struct SSEMessage: Sendable, Hashable {
    var id: String?
    var event: String
    var data: String
}

/// An incremental parser of a `text/event-stream` body (the WHATWG HTML
/// "event stream interpretation"): feed it bytes as they arrive, in any
/// chunking, and it returns the events completed so far.
///
/// Lines end in LF, CRLF or a lone CR (a CRLF split across two chunks counts
/// once); a line starting with `:` is a comment (the server's keep-alive);
/// a blank line dispatches the event, if it has data; `id:` persists across
/// events, as a browser's `lastEventId` does.
struct SSEParser {
    private var line: [UInt8] = []
    /// The previous chunk ended in CR: a LF starting the next one ends no line.
    private var skipLF = false
    private var event = ""
    private var data: [String] = []
    private var hasData = false
    /// The last event id, kept for the events after it until another `id:`.
    private(set) var lastEventID: String?

    /// Parses `bytes`; the events they complete, in order.
    mutating func feed<Bytes: Sequence>(_ bytes: Bytes) -> [SSEMessage] where Bytes.Element == UInt8 {
        var messages: [SSEMessage] = []
        for byte in bytes {
            if skipLF {
                skipLF = false
                if byte == 0x0A { continue }
            }
            switch byte {
            case 0x0A, 0x0D:
                skipLF = byte == 0x0D
                if let message = endLine() { messages.append(message) }
            default:
                line.append(byte)
            }
        }
        return messages
    }

    /// Handles the complete line in `line`; an event when it was blank.
    private mutating func endLine() -> SSEMessage? {
        defer { line.removeAll(keepingCapacity: true) }
        guard !line.isEmpty else { return dispatch() }
        if line[0] == UInt8(ascii: ":") { return nil }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let name = String(decoding: line[..<(colon ?? line.endIndex)], as: UTF8.self)
        var valueStart = colon.map { $0 + 1 } ?? line.endIndex
        if valueStart < line.endIndex, line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let value = String(decoding: line[valueStart...], as: UTF8.self)
        switch name {
        case "event": event = value
        case "data": data.append(value); hasData = true
        // An id with NUL is ignored, as the standard says.
        case "id" where !value.contains("\0"): lastEventID = value
        default: break // `retry:` and unknown fields
        }
        return nil
    }

    /// The event gathered since the last blank line, if it has data.
    private mutating func dispatch() -> SSEMessage? {
        defer {
            event = ""
            data.removeAll()
            hasData = false
        }
        guard hasData else { return nil }
        return SSEMessage(id: lastEventID, event: event.isEmpty ? "message" : event, data: data.joined(separator: "\n"))
    }
}
