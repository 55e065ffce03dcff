import FoundationEssentials
import Glibc

/// Reads a `multipart/form-data` body (RFC 7578) as it streams in, piece
/// by piece, and tells its consumer what it finds: each part's head, its
/// bytes (in as many pieces as they came), its end, and the body's end.
/// Holds back at most a delimiter's length of a part's bytes (a delimiter
/// may straddle two reads) and one part head: memory stays bounded however
/// large a part is.
struct FormDataReader {
    /// A part's `Content-Disposition` (`form-data; name="…"; filename="…"`)
    /// and `Content-Type`.
    struct PartHead: Equatable {
        var name: String
        var filename: String?
        var contentType: String?
    }

    enum Event {
        case head(PartHead)
        case bytes(UnsafeRawBufferPointer)
        case partEnd
    }

    /// What a part's head may take, all its lines together.
    static let maxHeadBytes = 16 * 1024

    private enum State { case preamble, afterDelimiter, head, part, done }

    /// `\r\n--boundary`: what ends a part (the body's first one is found
    /// as if a CRLF came before the body).
    private let delimiter: [UInt8]
    private var state = State.preamble
    /// Bytes read and not yet handed on (a part's tail that may begin a
    /// delimiter, an unfinished head).
    private var pending: [UInt8] = [0x0D, 0x0A]

    /// Whether the closing delimiter (`--boundary--`) has been read.
    var isComplete: Bool { state == .done }

    init(boundary: String) {
        delimiter = Array("\r\n--".utf8) + Array(boundary.utf8)
    }

    /// The boundary a `multipart/form-data` Content-Type names; nil for
    /// any other type.
    static func boundary(contentType: String) -> String? {
        let parameters = contentType.split(separator: ";").map { $0.trimmingWhitespace() }
        guard let type = parameters.first, type.lowercased() == "multipart/form-data" else { return nil }
        for parameter in parameters.dropFirst() {
            let (name, value) = Self.parameter(parameter)
            if name == "boundary", let value, !value.isEmpty, value.utf8.count <= 70 { return value }
        }
        return nil
    }

    /// Reads `chunk`, telling `consume` of what it completes. Throws
    /// `S3Error` for a body that is not form data.
    mutating func feed(_ chunk: UnsafeRawBufferPointer, _ consume: (Event) throws -> Void) throws {
        guard state != .done else { return }
        pending.append(contentsOf: chunk)
        var start = 0
        defer { pending.removeFirst(start) }
        while true {
            switch state {
            case .preamble, .part:
                if let at = find(delimiter, from: start) {
                    if state == .part {
                        if at > start { try emit(start..<at, consume) }
                        try consume(.partEnd)
                    }
                    start = at + delimiter.count
                    state = .afterDelimiter
                } else {
                    let keep = max(start, pending.count - (delimiter.count - 1))
                    if state == .part, keep > start { try emit(start..<keep, consume) }
                    start = keep
                    return
                }
            case .afterDelimiter:
                guard pending.count - start >= 2 else { return }
                if pending[start] == 0x2D, pending[start + 1] == 0x2D {
                    state = .done
                    start = pending.count
                    return
                }
                guard pending[start] == 0x0D, pending[start + 1] == 0x0A else {
                    throw Self.malformed("a boundary line is followed by something other than CRLF")
                }
                // The CRLF stays: a part without head lines is then found
                // by the same CRLF CRLF search.
                state = .head
            case .head:
                guard let end = find([0x0D, 0x0A, 0x0D, 0x0A], from: start) else {
                    if pending.count - start > Self.maxHeadBytes { throw Self.malformed("a part's head is over \(Self.maxHeadBytes) bytes") }
                    return
                }
                let lines = end > start ? String(decoding: pending[(start + 2)..<end], as: UTF8.self) : ""
                try consume(.head(try Self.head(lines)))
                start = end + 4
                state = .part
            case .done:
                start = pending.count
                return
            }
        }
    }

    private func emit(_ range: Range<Int>, _ consume: (Event) throws -> Void) throws {
        try pending.withUnsafeBytes { all in try consume(.bytes(UnsafeRawBufferPointer(rebasing: all[range]))) }
    }

    /// The first index at or after `from` where `needle` begins in `pending`
    /// (`memchr` to each candidate first byte, `memcmp` there: glibc's
    /// `memmem` is not in Swift's Glibc module).
    private func find(_ needle: [UInt8], from: Int) -> Int? {
        pending.withUnsafeBytes { haystack in
            needle.withUnsafeBytes { needle in
                let base = haystack.baseAddress!
                var at = from
                while haystack.count - at >= needle.count {
                    guard let hit = memchr(base + at, Int32(needle[0]), haystack.count - at - needle.count + 1) else { return nil }
                    at = UnsafeRawPointer(hit) - base
                    if memcmp(hit, needle.baseAddress!, needle.count) == 0 { return at }
                    at += 1
                }
                return nil
            }
        }
    }

    /// A part's head lines, CRLF-separated.
    static func head(_ lines: String) throws(S3Error) -> PartHead {
        var name: String?
        var filename: String?
        var contentType: String?
        for line in lines.components(separatedBy: "\r\n") where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw malformed("a part's head line has no colon") }
            let field = line[..<colon].trimmingWhitespace().lowercased()
            let value = line[line.index(after: colon)...].trimmingWhitespace()
            switch field {
            case "content-disposition":
                let parameters = Self.split(value)
                guard parameters.first?.lowercased() == "form-data" else {
                    throw malformed("a part's Content-Disposition is not form-data")
                }
                for parameter in parameters.dropFirst() {
                    switch Self.parameter(parameter) {
                    case ("name", let value?): name = value
                    case ("filename", let value?): filename = value
                    default: break
                    }
                }
            case "content-type":
                contentType = value
            default:
                break
            }
        }
        guard let name else { throw malformed("a part has no Content-Disposition name") }
        return PartHead(name: name, filename: filename, contentType: contentType)
    }

    /// `a; b="c; d"; e` split at the semicolons outside quotes.
    private static func split(_ value: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var quoted = false
        for c in value {
            if c == "\"" { quoted.toggle() }
            if c == ";" && !quoted {
                parts.append(current.trimmingWhitespace())
                current = ""
            } else {
                current.append(c)
            }
        }
        parts.append(current.trimmingWhitespace())
        return parts
    }

    /// `name=value` or `name="value"` (a quoted value's `\"` and `\\` undone), the name lower-cased.
    private static func parameter(_ text: String) -> (String, String?) {
        guard let eq = text.firstIndex(of: "=") else { return (text.lowercased(), nil) }
        let name = text[..<eq].trimmingWhitespace().lowercased()
        var value = Substring(text[text.index(after: eq)...].trimmingWhitespace())
        guard value.count >= 2, value.first == "\"", value.last == "\"" else { return (name, String(value)) }
        value = value.dropFirst().dropLast()
        var unescaped = ""
        var escaping = false
        for c in value {
            if escaping || c != "\\" {
                unescaped.append(c)
                escaping = false
            } else {
                escaping = true
            }
        }
        return (name, unescaped)
    }

    private static func malformed(_ why: String) -> S3Error {
        S3Error(.badRequest, "MalformedPOSTRequest", "The body of your POST request is not well-formed multipart/form-data: \(why).")
    }
}
