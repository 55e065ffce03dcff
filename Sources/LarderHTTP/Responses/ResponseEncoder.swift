/// Writes a response head into the output buffer and decides how its body
/// is framed. HEAD is handled here, once: the head of the GET answer with
/// its Content-Length, and no body.
enum ResponseEncoder {
    enum Framing {
        /// No body bytes follow (HEAD, 204, 304, empty).
        case none
        /// Exactly this many bytes follow (in the buffer or from a stream).
        case length(Int64)
        /// Chunked coding, ended by `lastChunk`.
        case chunked
        /// The body ends when the connection closes (HTTP/1.0 clients of a
        /// push body or an unsized stream).
        case untilClose
    }

    static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)
    /// The status lines of most answers, whole (five appends each otherwise).
    static let statusLine200: [UInt8] = Array("HTTP/1.1 200 OK\r\n".utf8)
    static let statusLine204: [UInt8] = Array("HTTP/1.1 204 No Content\r\n".utf8)

    static func encodeHead(_ response: HTTPResponse, into output: inout OutputBuffer,
                           isHead: Bool, close: Bool, chunkedAllowed: Bool) -> Framing {
        let code = response.status.code
        switch code {
        case 200: output.append(statusLine200)
        case 204: output.append(statusLine204)
        default:
            output.append("HTTP/1.1 ")
            output.append(decimal: Int64(code))
            output.append(" ")
            output.append(response.status.reason)
            output.append("\r\n")
        }
        var hasLength = false
        for (name, value) in response.headers {
            if !hasLength && name.utf8.count == 14 && name.lowercased() == "content-length" { hasLength = true }
            output.append(name)
            output.append(": ")
            output.append(value)
            output.append("\r\n")
        }
        if let block = response.headerBlock {
            output.append(block.bytes)
            hasLength = hasLength || block.hasContentLength
        }
        output.append("Date: ")
        output.append(HTTPDate.nowBytes())
        output.append("\r\nServer: larder\r\n")
        let bodyless = code < 200 || code == 204 || code == 304
        var framing: Framing
        switch response.body {
        case .empty: framing = .length(0)
        case .bytes(let b): framing = .length(Int64(b.count))
        case .stream(_, let length): framing = .length(length)
        case .file(let region): framing = .length(region.totalLength)
        case .push, .unsizedStream: framing = chunkedAllowed ? .chunked : .untilClose
        }
        if bodyless { framing = .none }
        switch framing {
        case .length(let n) where !hasLength:
            output.append("Content-Length: ")
            output.append(decimal: n)
            output.append("\r\n")
        case .chunked:
            output.append("Transfer-Encoding: chunked\r\n")
        default:
            break
        }
        if close { output.append("Connection: close\r\n") }
        output.append("\r\n")
        return isHead ? .none : framing
    }

    /// One chunk of chunked coding.
    static func appendChunk(_ bytes: [UInt8], into output: inout OutputBuffer) {
        guard !bytes.isEmpty else { return }
        output.append(String(bytes.count, radix: 16))
        output.append("\r\n")
        output.append(bytes)
        output.append("\r\n")
    }
}
