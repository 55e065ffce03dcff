import Foundation
import LarderWire
#if canImport(Glibc)
import Glibc
#endif

/// One Server-Sent Event as a client sees it.
package struct SSEEvent: Equatable, CustomStringConvertible {
    package var id: String?
    package var event: String
    package var data: String

    /// `data` parsed as a JSON object (nil if it is not one).
    package var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any]
    }

    package var description: String { "[\(id ?? "-") \(event) \(data)]" }
}

/// A `GET /events` reader on its own raw socket: sends the request, reads
/// the response head, then decodes the chunked `text/event-stream` body
/// incrementally and parses it into events (and comments), with timeouts.
/// `receiveBuffer` sets SO_RCVBUF before connecting, for a reader meant to
/// stall; such a reader simply never calls `nextEvent`.
package final class SSEClient {
    private let connection: HTTPClientConnection
    package var fd: Int32 { connection.fd }
    package private(set) var status = 0
    package private(set) var headers: [(String, String)] = []
    /// Comment lines seen so far (without the leading `:`, trimmed).
    package private(set) var comments: [String] = []
    /// The server ended the body (last chunk) or closed the connection.
    package private(set) var ended = false

    private var raw: [UInt8] = []      // bytes off the socket, not yet de-chunked
    private var text: [UInt8] = []     // de-chunked body, not yet parsed
    private var chunkLeft: Int? = nil  // bytes left in the current chunk (nil: expecting a size line)
    private var headRead = false
    private var closed = false

    package init(host: String = "127.0.0.1", port: Int, target: String = "/events", headers: [(String, String)] = [],
         receiveBuffer: Int? = nil) throws {
        connection = try HTTPClientConnection(host: host, port: port, receiveBuffer: receiveBuffer)
        var head = "GET \(target) HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        try connection.send(Array(head.utf8))
    }

    package func close() {
        guard !closed else { return }
        closed = true
        connection.close()
    }

    package func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// Reads what is available, waiting at most until `deadline`; false on
    /// timeout, EOF or error (then `ended` is set for EOF/error).
    private func fill(until deadline: Date) -> Bool {
        guard !ended, !closed else { return false }
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return false }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(max(1, min(left, 60) * 1000)))
            if ready < 0 { if errno == EINTR { continue }; ended = true; return false }
            if ready == 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { raw.append(contentsOf: chunk[0..<n]); return true }
            if n == 0 { ended = true; return false }
            if errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { continue }
            ended = true
            return false
        }
    }

    /// Reads the status line and headers (at most `timeout` seconds).
    @discardableResult
    package func readHead(timeout: Double = Poll.patience) throws -> Int {
        if headRead { return status }
        let deadline = Date().addingTimeInterval(timeout)
        let terminator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = Self.find(terminator, in: raw) {
                let lines = String(decoding: raw[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
                raw.removeFirst(end + 4)
                let parts = lines[0].split(separator: " ", maxSplits: 2)
                guard parts.count >= 2, let code = Int(parts[1]) else { throw ClientError("bad status line: \(lines[0])") }
                status = code
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
                }
                headRead = true
                if header("Transfer-Encoding")?.lowercased() != "chunked" {
                    // Not a stream: keep the body as text (Content-Length or close framed).
                    chunkLeft = Int.max
                }
                return status
            }
            guard fill(until: deadline) else { throw ClientError("no response head within \(timeout) s (ended: \(ended))") }
        }
    }

    /// Moves complete chunk data from `raw` to `text`.
    private func decodeChunks() {
        while true {
            if let left = chunkLeft {
                if left == Int.max { text += raw; raw = []; return }  // not chunked
                if left > 0 {
                    let n = min(left, raw.count)
                    if n == 0 { return }
                    text += raw[0..<n]
                    raw.removeFirst(n)
                    chunkLeft = left - n
                    if left - n > 0 { return }
                }
                // Chunk data done: its CRLF.
                guard raw.count >= 2 else { return }
                raw.removeFirst(2)
                chunkLeft = nil
            } else {
                guard let end = Self.find([13, 10], in: raw) else { return }
                let line = String(decoding: raw[0..<end], as: UTF8.self)
                raw.removeFirst(end + 2)
                let size = Int(line.split(separator: ";").first.map(String.init) ?? "", radix: 16) ?? 0
                if size == 0 { ended = true; return }
                chunkLeft = size
            }
        }
    }

    /// The next complete event block from `text`, collecting comments on the way.
    private func parseEvent() -> SSEEvent? {
        while let end = Self.find([10, 10], in: text) {
            let block = String(decoding: text[0..<end], as: UTF8.self)
            text.removeFirst(end + 2)
            var event = SSEEvent(id: nil, event: "message", data: "")
            var sawField = false
            var dataLines: [String] = []
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(":") {
                    comments.append(line.dropFirst().trimmingCharacters(in: .whitespaces))
                    continue
                }
                let name: Substring, value: Substring
                if let colon = line.firstIndex(of: ":") {
                    name = line[..<colon]
                    var v = line[line.index(after: colon)...]
                    if v.hasPrefix(" ") { v = v.dropFirst() }
                    value = v
                } else {
                    name = line; value = ""
                }
                switch name {
                case "id": event.id = String(value); sawField = true
                case "event": event.event = String(value); sawField = true
                case "data": dataLines.append(String(value)); sawField = true
                default: break
                }
            }
            if sawField {
                event.data = dataLines.joined(separator: "\n")
                return event
            }
        }
        return nil
    }

    /// The next event, or nil when none arrives within `timeout` seconds or
    /// the stream ended. The head, if not read yet, is waited for as long
    /// as `readHead` waits: a short `timeout` is for events that must not come.
    package func nextEvent(timeout: Double = Poll.patience) throws -> SSEEvent? {
        if !headRead { try readHead() }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            decodeChunks()
            if let event = parseEvent() { return event }
            if ended && raw.isEmpty { return nil }
            guard fill(until: deadline) else {
                decodeChunks()
                return parseEvent()
            }
        }
    }

    /// Exactly `count` events (fewer if the time runs out or the stream ends).
    package func events(_ count: Int, timeout: Double = Poll.patience) throws -> [SSEEvent] {
        let deadline = Date().addingTimeInterval(timeout)
        var out: [SSEEvent] = []
        while out.count < count {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let event = try nextEvent(timeout: left) else { break }
            out.append(event)
        }
        return out
    }

    /// Reads until a comment equal to `comment` has been seen; false on timeout.
    /// Events read meanwhile are returned through `skipped`.
    package func waitForComment(_ comment: String, timeout: Double, skipped: inout [SSEEvent]) throws -> Bool {
        try waitForComments(comment, count: 1, timeout: timeout, skipped: &skipped)
    }

    /// Reads until `comment` has come `count` times in all (events read
    /// meanwhile go to `skipped`); false at the deadline or the stream's end.
    package func waitForComments(_ comment: String, count: Int, timeout: Double, skipped: inout [SSEEvent]) throws -> Bool {
        if !headRead { try readHead() }
        let deadline = Date().addingTimeInterval(timeout)
        func enough() -> Bool { comments.lazy.filter { $0 == comment }.count >= count }
        while !enough() {
            decodeChunks()
            while let event = parseEvent() { skipped.append(event) }
            if enough() { return true }
            if ended && raw.isEmpty { return false }
            guard fill(until: deadline) else { return enough() }
        }
        return true
    }


    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = 0
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == needle[0] {
                var match = true
                for j in 1..<needle.count where haystack[i + j] != needle[j] { match = false; break }
                if match { return i }
            }
            i += 1
        }
        return nil
    }
}
