/// Parses request heads incrementally from a byte buffer (RFC 9112).
///
/// Strict where leniency enables request smuggling: no whitespace before a
/// colon, no obs-fold, no bare CR, no Content-Length together with
/// Transfer-Encoding, no conflicting Content-Lengths, chunked must be the
/// final (and only) transfer coding. A lone LF ends a line, as RFC 9112 2.2
/// allows. Each failure is an `HTTPError` with the status to answer.
package struct HTTPRequestParser {
    package enum Result {
        case incomplete
        case complete(HTTPRequestHead, consumed: Int)
        case failure(HTTPError)
        /// Only empty lines so far; drop these bytes.
        case skip(Int)
    }

    let maxRequestLineBytes: Int
    let maxHeaderBytes: Int
    let refusesUnknownExpectations: Bool
    /// Where the search for the end of the head resumes, so a head that
    /// trickles in byte by byte is not rescanned from the start each time.
    private var scanned = 0

    package init(configuration: HTTPServerConfiguration) {
        maxRequestLineBytes = configuration.maxRequestLineBytes
        maxHeaderBytes = configuration.maxHeaderBytes
        refusesUnknownExpectations = configuration.refusesUnknownExpectations
    }

    /// Call with the unconsumed bytes; on `.complete` the next call starts
    /// after `consumed`.
    package mutating func parse(_ buffer: UnsafeRawBufferPointer) -> Result {
        // Empty lines before a request line are ignored (RFC 9112 2.2).
        var start = 0
        while start < buffer.count && (buffer[start] == 0x0D || buffer[start] == 0x0A) { start += 1 }
        if start > 0 {
            scanned = 0
            return .skip(start)
        }
        if buffer.count == 0 { return .incomplete }

        // Find the end of the request line.
        guard let lineEnd = Self.find(0x0A, in: buffer, from: start) else {
            scanned = 0
            // A trailing CR may be the start of the line's CRLF: not counted.
            if buffer.count - start > maxRequestLineBytes + 1 {
                return .failure(HTTPError(.uriTooLong, .uriTooLong,
                                          "the request line is longer than \(maxRequestLineBytes) bytes", closeConnection: true))
            }
            return .incomplete
        }
        let requestLineLength = lineEnd - start - (lineEnd > start && buffer[lineEnd - 1] == 0x0D ? 1 : 0)
        if requestLineLength > maxRequestLineBytes {
            return .failure(HTTPError(.uriTooLong, .uriTooLong,
                                      "the request line is longer than \(maxRequestLineBytes) bytes", closeConnection: true))
        }

        // Find the empty line that ends the header section.
        var headEnd: Int? = nil  // index just past the final LF
        var lf = max(scanned, lineEnd)
        while let next = Self.find(0x0A, in: buffer, from: lf) {
            if next + 1 < buffer.count && buffer[next + 1] == 0x0A { headEnd = next + 2; break }
            if next + 2 < buffer.count && buffer[next + 1] == 0x0D && buffer[next + 2] == 0x0A { headEnd = next + 3; break }
            if next + 2 >= buffer.count { break }
            lf = next + 1
        }
        // The header section counts every field line with its line ending,
        // not the request line and not the final empty line.
        let headerStart = lineEnd + 1
        guard let end = headEnd else {
            scanned = max(lineEnd, buffer.count - 3)
            // One trailing byte may be the CR of the final empty line.
            if buffer.count - headerStart > maxHeaderBytes + 1 {
                return .failure(HTTPError(.headersTooLarge, .headersTooLarge,
                                          "the header section is larger than \(maxHeaderBytes) bytes", closeConnection: true))
            }
            return .incomplete
        }
        scanned = 0
        let emptyLine = end - 2 >= headerStart && buffer[end - 2] == 0x0D ? 2 : 1
        if end - headerStart - emptyLine > maxHeaderBytes {
            return .failure(HTTPError(.headersTooLarge, .headersTooLarge,
                                      "the header section is larger than \(maxHeaderBytes) bytes", closeConnection: true))
        }
        do {
            let head = try Self.parseHead(UnsafeRawBufferPointer(rebasing: buffer[start..<end]),
                                          requestLineEnd: lineEnd - start, refusesUnknownExpectations: refusesUnknownExpectations)
            return .complete(head, consumed: end)
        } catch let error as HTTPError {
            return .failure(error)
        } catch {
            return .failure(HTTPError(.badRequest, .badRequest, "\(error)", closeConnection: true))
        }
    }

    static func find(_ byte: UInt8, in buffer: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard from < buffer.count else { return nil }
        guard let p = memchr(buffer.baseAddress! + from, Int32(byte), buffer.count - from) else { return nil }
        return buffer.baseAddress!.distance(to: UnsafeRawPointer(p))
    }

    private static func bad(_ message: String) -> HTTPError {
        HTTPError(.badRequest, .badRequest, message, closeConnection: true)
    }

    /// `head` spans the request line through the final empty line.
    ///
    /// Read in place through the raw buffer (each request passes here: a
    /// generic slice operation costs tens of instructions a byte); the bytes
    /// are copied once, for the headers to keep.
    private static func parseHead(_ head: UnsafeRawBufferPointer, requestLineEnd: Int,
                                  refusesUnknownExpectations: Bool) throws -> HTTPRequestHead {
        // Request line: method SP target SP version.
        var lineLength = requestLineEnd
        if lineLength > 0 && head[lineLength - 1] == 0x0D { lineLength -= 1 }
        guard let sp1 = index(of: 0x20, in: head, from: 0, to: lineLength),
              let sp2 = index(of: 0x20, in: head, from: sp1 + 1, to: lineLength) else {
            throw bad("the request line is not 'METHOD target HTTP/1.1'")
        }
        let methodBytes = UnsafeRawBufferPointer(rebasing: head[0..<sp1])
        guard !methodBytes.isEmpty, methodBytes.allSatisfy(isTokenByte) else { throw bad("the method is not a token") }
        let method = parseMethod(methodBytes)
        let version = try parseVersion(UnsafeRawBufferPointer(rebasing: head[(sp2 + 1)..<lineLength]))
        let target = try parseTarget(UnsafeRawBufferPointer(rebasing: head[(sp1 + 1)..<sp2]), method: method)

        // Header fields.
        var fields: [(name: Range<Int>, value: Range<Int>)] = []
        fields.reserveCapacity(12)
        var contentLength: Int64? = nil
        var transferCodings: [String] = []
        var sawTransferEncoding = false
        var connectionClose = false
        var expectsContinue = false
        var hostCount = 0
        var lineStart = requestLineEnd + 1
        while lineStart < head.count {
            // The head ends with an empty line, so every line has its LF.
            let lineEnd = index(of: 0x0A, in: head, from: lineStart, to: head.count)!
            var contentEnd = lineEnd
            if contentEnd > lineStart && head[contentEnd - 1] == 0x0D { contentEnd -= 1 }
            defer { lineStart = lineEnd + 1 }
            if contentEnd == lineStart { break }  // the empty line
            let (nameRange, valueRange) = try HTTPFieldLine.parse(head, from: lineStart, to: contentEnd)
            fields.append((nameRange, valueRange))
            let name = UnsafeRawBufferPointer(rebasing: head[nameRange])
            let value = UnsafeRawBufferPointer(rebasing: head[valueRange])
            // The names the framing depends on, told apart by length first.
            switch name.count {
            case 14 where equalsLower(name, "content-length"):
                // Empty list members (`Content-Length: ,`) are not skipped: a
                // length that parses as nothing must not mean "no body".
                func take(_ part: Slice<UnsafeRawBufferPointer>) throws {
                    guard let n = parseDecimal(trimOWS(part)) else { throw bad("Content-Length is not a number") }
                    if let existing = contentLength, existing != n {
                        throw bad("conflicting Content-Length values")
                    }
                    contentLength = n
                }
                // One value, the common case, is not split (an array a request).
                if value.contains(0x2C) {
                    for part in value.split(separator: 0x2C, omittingEmptySubsequences: false) { try take(part) }
                } else {
                    try take(value[...])
                }
                if value.isEmpty { throw bad("Content-Length is empty") }
            case 17 where equalsLower(name, "transfer-encoding"):
                sawTransferEncoding = true
                for part in value.split(separator: 0x2C) {
                    let coding = String(decoding: trimOWS(part).map(asciiLower), as: UTF8.self)
                    if !coding.isEmpty { transferCodings.append(coding) }
                }
            case 10 where equalsLower(name, "connection"):
                for part in value.split(separator: 0x2C) where equalsLower(trimOWS(part), "close") {
                    connectionClose = true
                }
            case 6 where equalsLower(name, "expect"):
                if equalsLower(value, "100-continue") {
                    expectsContinue = true
                } else if refusesUnknownExpectations {
                    throw HTTPError(.expectationFailed, .expectationFailed, "only 'Expect: 100-continue' is supported", closeConnection: true)
                }
            case 4 where equalsLower(name, "host"):
                hostCount += 1
                guard isValidHost(value) else { throw bad("the Host header is not a valid host[:port]") }
            default:
                break
            }
        }

        // Framing (RFC 9112 6.1-6.3).
        var isChunked = false
        if sawTransferEncoding {
            if contentLength != nil {
                throw bad("a request must not carry both Content-Length and Transfer-Encoding")
            }
            if version == .http10 { throw bad("Transfer-Encoding is not allowed in HTTP/1.0") }
            guard transferCodings.last == "chunked" else {
                throw bad("chunked must be the final transfer coding")
            }
            guard transferCodings.count == 1 else {
                throw HTTPError(.notImplemented, .notImplemented, "only the chunked transfer coding is supported", closeConnection: true)
            }
            isChunked = true
        }
        if version == .http11 && hostCount != 1 {
            throw bad(hostCount == 0 ? "an HTTP/1.1 request needs a Host header" : "more than one Host header")
        }
        // HTTP/1.0 keep-alive is not offered: 1.0 is answered and closed.
        let keepAlive = version == .http11 && !connectionClose
        return HTTPRequestHead(method: method, version: version, target: target,
                               headers: HTTPHeaders(bytes: Array(head), fields: fields),
                               contentLength: isChunked ? nil : contentLength, isChunked: isChunked,
                               expectsContinue: expectsContinue && version == .http11, keepAlive: keepAlive)
    }

    /// The first `byte` in `buffer[from..<to]`.
    @inline(__always)
    private static func index(of byte: UInt8, in buffer: UnsafeRawBufferPointer, from: Int, to: Int) -> Int? {
        guard from < to, let p = memchr(buffer.baseAddress! + from, Int32(byte), to - from) else { return nil }
        return buffer.baseAddress!.distance(to: UnsafeRawPointer(p))
    }

    private static func parseVersion(_ v: UnsafeRawBufferPointer) throws -> HTTPVersion {
        guard v.count == 8, v[0] == 0x48, v[1] == 0x54, v[2] == 0x54, v[3] == 0x50, v[4] == 0x2F,  // "HTTP/"
              isDigit(v[5]), v[6] == 0x2E, isDigit(v[7]) else {
            throw bad("the request line does not end in a valid HTTP version")
        }
        // RFC 9110 2.5: a higher minor version of a major version we
        // implement is processed as the highest minor we conform to.
        guard v[5] == 0x31 else {
            throw HTTPError(.versionNotSupported, .versionNotSupported, "only HTTP/1.x is supported", closeConnection: true)
        }
        return v[7] == 0x30 ? .http10 : .http11
    }

    private static func parseMethod(_ m: UnsafeRawBufferPointer) -> HTTPMethod {
        // Byte compares (a generic `elementsEqual` is a few hundred instructions).
        func `is`(_ name: StaticString) -> Bool {
            m.count == name.utf8CodeUnitCount && memcmp(m.baseAddress!, name.utf8Start, m.count) == 0
        }
        switch m.count {
        case 3:
            if `is`("GET") { return .get }
            if `is`("PUT") { return .put }
        case 4:
            if `is`("HEAD") { return .head }
            if `is`("POST") { return .post }
        case 5:
            if `is`("PATCH") { return .patch }
        case 6:
            if `is`("DELETE") { return .delete }
        case 7:
            if `is`("OPTIONS") { return .options }
        default: break
        }
        return .other(String(decoding: m, as: UTF8.self))
    }

    private static func parseTarget(_ t: UnsafeRawBufferPointer, method: HTTPMethod) throws -> String {
        guard !t.isEmpty else { throw bad("the request target is empty") }
        // Every form is checked whole, before absolute-form is reduced: no
        // byte of the target (authority and query included) may be a control
        // or a space. A fragment is never sent (RFC 9112 3.2: the target has
        // none); a `#` taken as part of a key would name a key the client
        // never meant. (One pass: this loop is on every request.)
        var ascii = true
        for c in t {
            if c <= 0x20 || c == 0x7F || c == 0x23 {
                if c == 0x23 { throw bad("the request target contains '#' (a fragment is not sent; encode it as %23)") }
                throw bad("the request target contains a control character or space")
            }
            if c >= 0x80 { ascii = false }
        }
        if t.count == 1 && t[0] == 0x2A {
            guard method == .options else { throw bad("'*' is only a target for OPTIONS") }
            return "*"
        }
        var bytes = t
        // absolute-form: keep the path and query; a query without a path
        // (`http://host?q`) gets the path `/`.
        var prefix = ""
        if t[0] != 0x2F {
            let lowered = t.prefix(8).map(asciiLower)
            if lowered.starts(with: "http://".utf8) || lowered.starts(with: "https://".utf8) {
                let afterScheme = lowered.starts(with: "https://".utf8) ? 8 : 7
                guard let slash = t[afterScheme...].firstIndex(where: { $0 == 0x2F || $0 == 0x3F }) else { return "/" }
                bytes = UnsafeRawBufferPointer(rebasing: t[slash...])
                if bytes.first == 0x3F { prefix = "/" }
            }
        }
        guard prefix == "/" || bytes.first == 0x2F else { throw bad("the request target must start with '/'") }
        if ascii { return prefix.isEmpty ? String(decoding: bytes, as: UTF8.self) : prefix + String(decoding: bytes, as: UTF8.self) }
        // Raw non-ASCII bytes: percent-encode them so key decoding sees them exactly.
        var out = prefix
        let hex: [Character] = Array("0123456789ABCDEF")
        for c in bytes {
            if c >= 0x80 {
                out.append("%"); out.append(hex[Int(c >> 4)]); out.append(hex[Int(c & 15)])
            } else {
                out.unicodeScalars.append(Unicode.Scalar(c))
            }
        }
        return out
    }

    package static func isTokenByte(_ c: UInt8) -> Bool {
        switch c {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: return true
        default: return false
        }
    }

    private static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    /// RFC 3986 unreserved and sub-delims: what a reg-name (and the tail of
    /// an IPvFuture) is made of, besides percent-escapes.
    private static func isUnreservedOrSubDelim(_ c: UInt8) -> Bool {
        switch c {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: return true  // ALPHA DIGIT - . _ ~
        case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D: return true  // ! $ & ' ( ) * + , ; =
        default: return false
        }
    }

    /// A Host value: uri-host [ ":" port ] (RFC 9112 3.2, RFC 3986 3.2.2
    /// and 3.2.3), uri-host being an IP-literal in brackets or a reg-name
    /// (which IPv4 addresses are too), the port digits only. Empty is
    /// valid: a client sends an empty Host for a target without authority.
    static func isValidHost(_ value: UnsafeRawBufferPointer) -> Bool {
        var i = value.startIndex
        if i < value.endIndex && value[i] == 0x5B {
            guard let close = value[i...].firstIndex(of: 0x5D) else { return false }
            let literal = value[(i + 1)..<close]
            guard isIPv6Shaped(literal) || isIPvFuture(literal) else { return false }
            i = close + 1
        } else {
            while i < value.endIndex && value[i] != 0x3A {
                if value[i] == 0x25 {
                    guard i + 2 < value.endIndex, HexDigit.isDigit(value[i + 1]), HexDigit.isDigit(value[i + 2]) else { return false }
                    i += 3
                    continue
                }
                guard isUnreservedOrSubDelim(value[i]) else { return false }
                i += 1
            }
        }
        if i == value.endIndex { return true }
        guard value[i] == 0x3A else { return false }
        return value[(i + 1)...].allSatisfy(isDigit)
    }

    /// The characters of an IPv6address (hex digits, colons, and dots for
    /// an embedded IPv4): enough to refuse what is no address at all.
    private static func isIPv6Shaped(_ s: Slice<UnsafeRawBufferPointer>) -> Bool {
        s.count >= 2 && s.contains(0x3A) && s.allSatisfy { HexDigit.isDigit($0) || $0 == 0x3A || $0 == 0x2E }
    }

    /// IPvFuture: "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ).
    private static func isIPvFuture(_ s: Slice<UnsafeRawBufferPointer>) -> Bool {
        guard let v = s.first, v == 0x76 || v == 0x56, let dot = s.firstIndex(of: 0x2E) else { return false }
        let version = s[(s.startIndex + 1)..<dot], rest = s[(dot + 1)...]
        return !version.isEmpty && version.allSatisfy(HexDigit.isDigit)
            && !rest.isEmpty && rest.allSatisfy { isUnreservedOrSubDelim($0) || $0 == 0x3A }
    }

    /// Whether `a` is `b` (lowercase ASCII) in any case.
    @inline(__always)
    private static func equalsLower<C: Collection<UInt8>>(_ a: C, _ b: StaticString) -> Bool {
        guard a.count == b.utf8CodeUnitCount else { return false }
        var p = b.utf8Start
        for c in a {
            if asciiLower(c) != p.pointee { return false }
            p += 1
        }
        return true
    }

    private static func trimOWS(_ s: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        var s = s
        while let f = s.first, f == 0x20 || f == 0x09 { s = s.dropFirst() }
        while let l = s.last, l == 0x20 || l == 0x09 { s = s.dropLast() }
        return s
    }

    /// 1*DIGIT, no sign, no overflow.
    static func parseDecimal<C: Collection<UInt8>>(_ s: C) -> Int64? {
        guard !s.isEmpty, s.count <= 18 else { return nil }
        var n: Int64 = 0
        for c in s {
            guard isDigit(c) else { return nil }
            n = n * 10 + Int64(c - 0x30)
        }
        return n
    }
}

#if canImport(Glibc)
import Glibc
import LarderSupport
#endif
