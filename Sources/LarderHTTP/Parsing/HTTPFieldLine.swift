#if canImport(Glibc)
import Glibc
#endif

/// One field line, `name: value` (RFC 9112 section 5): the rules a header
/// line and a chunked body's trailer line (section 7.1.2) are both held
/// to, so a malformed trailer is refused exactly as a malformed header is.
enum HTTPFieldLine {
    /// Checks the line `line[start..<end]` (its CRLF left off) and returns
    /// where its name and its value (without surrounding whitespace) lie:
    /// no obs-fold, a colon, a non-empty token name with no whitespace
    /// before the colon, no control characters in the value.
    @inline(__always)
    static func parse(_ line: UnsafeRawBufferPointer, from start: Int, to end: Int,
                      what: StaticString = "header") throws(HTTPError) -> (name: Range<Int>, value: Range<Int>) {
        if line[start] == 0x20 || line[start] == 0x09 {
            throw bad("obsolete line folding in \(what)s is not accepted")
        }
        guard let p = memchr(line.baseAddress! + start, 0x3A, end - start) else {
            throw bad("a \(what) line has no colon")
        }
        let colon = line.baseAddress!.distance(to: UnsafeRawPointer(p))
        let name = UnsafeRawBufferPointer(rebasing: line[start..<colon])
        guard colon > start, name.allSatisfy(HTTPRequestParser.isTokenByte) else {
            throw bad("a \(what) name is empty or contains invalid characters (whitespace before ':' is not allowed)")
        }
        var vs = colon + 1
        var ve = end
        while vs < ve && (line[vs] == 0x20 || line[vs] == 0x09) { vs += 1 }
        while ve > vs && (line[ve - 1] == 0x20 || line[ve - 1] == 0x09) { ve -= 1 }
        for i in vs..<ve {
            let c = line[i]
            if (c < 0x20 && c != 0x09) || c == 0x7F { throw bad("a \(what) value contains a control character") }
        }
        return (start..<colon, vs..<ve)
    }

    private static func bad(_ message: String) -> HTTPError {
        HTTPError(.badRequest, .badRequest, message, closeConnection: true)
    }
}
