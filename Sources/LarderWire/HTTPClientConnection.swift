import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// A response as read off the wire.
public struct ClientResponse: Sendable {
    public let status: Int
    public let reason: String
    public let headers: [(String, String)]
    public let body: [UInt8]

    /// First value of a header (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public func headerValues(_ name: String) -> [String] {
        headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1)
    }

    public var text: String { String(decoding: body, as: UTF8.self) }
}

public struct ClientError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A blocking HTTP/1.1 connection over a plain socket. It sends exactly
/// the bytes it is given, so tests can send broken or pipelined requests,
/// and reads responses framed by Content-Length, chunked coding or close.
public final class HTTPClientConnection {
    public let fd: Int32
    private var buffer: [UInt8] = []
    private var eof = false

    /// `receiveBuffer` sets SO_RCVBUF before connecting (a reader meant to stall).
    public init(host: String = "127.0.0.1", port: Int, timeout: Double = 30, receiveBuffer: Int? = nil) throws {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let info = result else {
            throw ClientError("cannot resolve \(host)")
        }
        defer { freeaddrinfo(result) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError("socket failed: errno \(errno)") }
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        guard connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw ClientError("connect to \(host):\(port) failed: errno \(code)")
        }
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
    }

    private var isClosed = false

    deinit { close() }

    /// Closes the socket now (a client hanging up); safe to call twice.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }

    /// Sends all bytes (throws if the server closed the connection).
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ClientError("send failed: errno \(errno)")
            }
            offset += n
        }
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Half-closes the sending side.
    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    private func fill() throws -> Bool {
        if eof { return false }
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n > 0 {
                buffer.append(contentsOf: chunk[0..<n])
                return true
            }
            if n == 0 { eof = true; return false }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { throw ClientError("timed out waiting for the server") }
            if errno == ECONNRESET { eof = true; return false }
            throw ClientError("recv failed: errno \(errno)")
        }
    }

    /// True when the server has closed its side and nothing is buffered.
    public func isClosedByPeer() throws -> Bool {
        if !buffer.isEmpty { return false }
        return try !fill() && buffer.isEmpty
    }

    private func readLine() throws -> String {
        while true {
            if let i = buffer.firstIndex(of: 0x0A) {
                var line = Array(buffer[0..<i])
                buffer.removeFirst(i + 1)
                if line.last == 0x0D { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            guard try fill() else { throw ClientError("connection closed before a full line arrived") }
        }
    }

    private func readExactly(_ n: Int) throws -> [UInt8] {
        while buffer.count < n {
            guard try fill() else { throw ClientError("connection closed \(n - buffer.count) bytes before the body ended") }
        }
        let out = Array(buffer[0..<n])
        buffer.removeFirst(n)
        return out
    }

    /// Reads one response. Interim 1xx responses are returned like any
    /// other; pass `skipInterim` to read past them. `bodyExpected: false`
    /// for HEAD (headers only).
    public func readResponse(bodyExpected: Bool = true, skipInterim: Bool = true) throws -> ClientResponse {
        while true {
            let statusLine = try readLine()
            let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
                throw ClientError("bad status line: \(statusLine)")
            }
            var headers: [(String, String)] = []
            while true {
                let line = try readLine()
                if line.isEmpty { break }
                guard let colon = line.firstIndex(of: ":") else { throw ClientError("bad header line: \(line)") }
                headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingWhitespace()))
            }
            let reason = parts.count > 2 ? String(parts[2]) : ""
            let partial = ClientResponse(status: status, reason: reason, headers: headers, body: [])
            if status >= 100 && status < 200 {
                if skipInterim { continue }
                return partial
            }
            if !bodyExpected || status == 204 || status == 304 { return partial }
            var body: [UInt8] = []
            if partial.header("Transfer-Encoding")?.lowercased() == "chunked" {
                while true {
                    let sizeLine = try readLine()
                    guard let size = Int(sizeLine.split(separator: ";")[0], radix: 16) else { throw ClientError("bad chunk size") }
                    if size == 0 {
                        while try !readLine().isEmpty {}
                        break
                    }
                    body += try readExactly(size)
                    _ = try readLine()
                }
            } else if let length = partial.header("Content-Length").flatMap({ Int($0) }) {
                body = try readExactly(length)
            } else {
                while try fill() {}
                body = buffer
                buffer = []
            }
            return ClientResponse(status: status, reason: reason, headers: headers, body: body)
        }
    }

    /// Reads a response whose body (Content-Length framed or chunked) is
    /// handed to `body` in pieces instead of being kept, for bodies too large
    /// to hold. A slow `body` makes a slow reader.
    public func readStreamingResponse(body: (UnsafeRawBufferPointer) throws -> Void) throws -> ClientResponse {
        let head = try readResponse(bodyExpected: false)
        if head.header("Transfer-Encoding")?.lowercased() == "chunked" {
            try readChunks(body)
            return head
        }
        guard var remaining = head.header("Content-Length").flatMap({ Int($0) }) else {
            throw ClientError("streaming needs a Content-Length or chunked response")
        }
        if !buffer.isEmpty {
            let n = min(remaining, buffer.count)
            try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            buffer.removeFirst(n)
            remaining -= n
        }
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 18, alignment: 16)
        defer { chunk.deallocate() }
        while remaining > 0 {
            let n = recv(fd, chunk.baseAddress!, min(chunk.count, remaining), 0)
            if n > 0 {
                try body(UnsafeRawBufferPointer(rebasing: chunk[0..<n]))
                remaining -= n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                throw ClientError("connection closed or failed \(remaining) bytes before the body ended")
            }
        }
        return head
    }

    /// A chunked body, each piece handed over as it arrives (at most one
    /// receive's worth is held).
    private func readChunks(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        while true {
            let sizeLine = try readLine()
            guard let size = Int(sizeLine.split(separator: ";", omittingEmptySubsequences: false)[0], radix: 16) else {
                throw ClientError("bad chunk size line: \(sizeLine)")
            }
            if size == 0 {
                while try !readLine().isEmpty {}
                return
            }
            var remaining = size
            while remaining > 0 {
                if buffer.isEmpty, try !fill() {
                    throw ClientError("connection closed \(remaining) bytes before the chunk ended")
                }
                let n = min(remaining, buffer.count)
                try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                buffer.removeFirst(n)
                remaining -= n
            }
            guard try readLine().isEmpty else { throw ClientError("a chunk does not end with CRLF") }
        }
    }

    /// Sends one request and reads its response.
    public func request(_ method: String, _ target: String, headers: [(String, String)] = [],
                        body: [UInt8]? = nil) throws -> ClientResponse {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body, !headers.contains(where: { $0.0.lowercased() == "content-length" || $0.0.lowercased() == "transfer-encoding" }) {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "\r\n"
        try send(Array(head.utf8) + (body ?? []))
        return try readResponse(bodyExpected: method != "HEAD")
    }
}
