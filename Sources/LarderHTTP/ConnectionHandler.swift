import Dispatch
import LarderLog
#if canImport(Glibc)
import Glibc
#endif

/// What every connection shares with its server.
final class ServerContext: Sendable {
    let configuration: HTTPServerConfiguration
    let handler: HTTPRequestHandler
    let logger: Logger

    init(configuration: HTTPServerConfiguration, handler: HTTPRequestHandler, logger: Logger) {
        self.configuration = configuration
        self.handler = handler
        self.logger = logger
    }
}

/// One client connection: a non-blocking socket driven by DispatchSource
/// read/write sources on the connection's own serial queue (which targets
/// the global pool: no extra thread hop per request).
///
/// Per readable event it reads everything available, answers every
/// complete pipelined request in the buffer and sends the answers in one
/// `send`. When the socket is full it suspends reading and waits on a write
/// source, so a slow reader holds no thread and no unbounded buffer.
///
/// All mutable state is confined to `queue`, hence `@unchecked Sendable`.
final class ConnectionHandler: @unchecked Sendable {
    private static let inputCapacityFloor = 64 * 1024
    private static let outputCapacity = 64 * 1024
    /// Body bytes of a streamed response buffered ahead of the socket.
    private static let streamAhead = 256 * 1024
    /// A body that is answered without being read is skipped when at most
    /// this large, otherwise the connection closes.
    private static let maxSkippedBody: Int64 = 1 << 20
    private static let lingerNanos: UInt64 = 2_000_000_000

    let queue: DispatchQueue
    private let fd: Int32
    private let context: ServerContext
    private let onClose: @Sendable (ConnectionHandler) -> Void
    private let configuration: HTTPServerConfiguration

    private var readSource: DispatchSourceRead?
    private var writeSource: DispatchSourceWrite?
    private var timer: DispatchSourceTimer?
    private var readSuspended = false
    private var writeSuspended = false
    private var liveSources = 0
    private var closed = false

    private var input: UnsafeMutableRawBufferPointer
    private var inStart = 0
    private var inEnd = 0
    private var output = OutputBuffer(capacity: ConnectionHandler.outputCapacity)
    private var parser: HTTPRequestParser

    private enum Phase {
        /// Waiting for (or reading) a request head.
        case head
        /// Reading a body into `sink`, or skipping it when `sink` is nil.
        case body
        /// A final answer is queued; nothing more is read as requests.
        case closing
        /// Sent FIN after the last answer; reading and dropping until the
        /// client closes, so unread input does not turn into a RST that
        /// destroys the answer in flight.
        case lingering
    }
    private var phase = Phase.head
    private var decoder: BodyDecoder?
    private var sink: HTTPRequestBodySink?
    private var stream: HTTPBodyStream?
    private var streamRemaining: Int64 = 0
    private var closeAfterOutput = false
    private var peerClosed = false
    private var shuttingDown = false
    private var stoppedForStream = false

    private struct RequestInfo {
        let method: HTTPMethod
        let target: String
        let started: UInt64
        let keepAlive: Bool
    }
    /// The request being answered, for keep-alive and the log line.
    private var request: RequestInfo?
    /// Log line of a streamed response, written when its last byte is queued.
    private var pendingLog: (info: RequestInfo?, status: Int, bytes: Int64)?

    private var now: UInt64 = DispatchTime.now().uptimeNanoseconds
    private var lastActivity: UInt64
    private var headStarted: UInt64?
    private var timerDeadline: UInt64 = .max
    private var lingerDeadline: UInt64 = 0

    init(fd: Int32, context: ServerContext, onClose: @escaping @Sendable (ConnectionHandler) -> Void) {
        self.fd = fd
        self.context = context
        self.configuration = context.configuration
        self.onClose = onClose
        self.queue = DispatchQueue(label: "larder.connection", target: .global())
        let capacity = max(Self.inputCapacityFloor,
                           configuration.maxRequestLineBytes + configuration.maxHeaderBytes + 4096)
        self.input = .allocate(byteCount: capacity, alignment: 16)
        self.parser = HTTPRequestParser(configuration: configuration)
        self.lastActivity = now
    }

    deinit {
        input.deallocate()
        output.deallocate()
    }

    // MARK: - Sources

    /// Call once, from any thread.
    func start() {
        queue.async { [self] in
            let rs = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
            rs.setEventHandler { [self] in onReadable() }
            rs.setCancelHandler { [self] in sourceCancelled() }
            liveSources += 1
            readSource = rs
            let t = DispatchSource.makeTimerSource(queue: queue)
            t.setEventHandler { [self] in onTimer() }
            timer = t
            scheduleTimer(deadlineNow())
            t.resume()
            rs.resume()
        }
    }

    private func sourceCancelled() {
        liveSources -= 1
        if liveSources == 0 && closed { Glibc.close(fd) }
    }

    private func waitForWritable() {
        if !readSuspended, let rs = readSource {
            rs.suspend()
            readSuspended = true
        }
        if let ws = writeSource {
            if writeSuspended { ws.resume(); writeSuspended = false }
            return
        }
        let ws = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        ws.setEventHandler { [self] in onWritable() }
        ws.setCancelHandler { [self] in sourceCancelled() }
        liveSources += 1
        writeSource = ws
        writeSuspended = false
        ws.resume()
    }

    private func stopWaitingForWritable() {
        if let ws = writeSource, !writeSuspended {
            ws.suspend()
            writeSuspended = true
        }
        if readSuspended && !peerClosed, let rs = readSource {
            rs.resume()
            readSuspended = false
        }
    }

    // MARK: - Events

    private func onReadable() {
        guard !closed else { return }
        now = DispatchTime.now().uptimeNanoseconds
        var eof = false
        while true {
            if inEnd == input.count { compactInput() }
            let space = input.count - inEnd
            if space == 0 { break }
            let n = recv(fd, input.baseAddress! + inEnd, space, 0)
            if n > 0 {
                inEnd += n
                if n < space { break }
                continue
            }
            if n == 0 { eof = true; break }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { break }
            context.logger.debug("connection \(fd): recv failed, errno \(code)")
            close()
            return
        }
        lastActivity = now
        if phase == .lingering {
            // Drop what arrives; close at EOF.
            inStart = 0
            inEnd = 0
            if eof { close() }
            return
        }
        if eof {
            peerClosed = true
            if !readSuspended, let rs = readSource { rs.suspend(); readSuspended = true }
        }
        drive()
    }

    private func onWritable() {
        guard !closed else { return }
        now = DispatchTime.now().uptimeNanoseconds
        lastActivity = now
        drive()
    }

    private func onTimer() {
        guard !closed else { return }
        now = DispatchTime.now().uptimeNanoseconds
        let deadline = deadlineNow()
        if now < deadline {
            scheduleTimer(deadline)
            return
        }
        switch phase {
        case .head where headStarted != nil && output.isEmpty && stream == nil:
            headStarted = nil
            send(HTTPError(.requestTimeout, "request_timeout",
                           "the request head did not arrive within \(configuration.headerTimeout) seconds",
                           closeConnection: true).response)
            drive()
        case .body where sink == nil || stream != nil:
            // The request was answered already (its body was being skipped):
            // a late 408 would be a stray response.
            close()
        case .body:
            sink?.abort()
            sink = nil
            decoder = nil
            phase = .head
            send(HTTPError(.requestTimeout, "request_timeout",
                           "the request body stalled for \(configuration.idleTimeout) seconds",
                           closeConnection: true).response)
            drive()
        default:
            if phase != .lingering && (!output.isEmpty || stream != nil) && sendQueueShrank() {
                // A slow reader that keeps reading is not idle.
                lastActivity = now
            } else if phase == .head && !readSuspended && output.isEmpty && stream == nil && bytesWaiting() {
                // Data arrived but its read event has not run yet (a busy
                // machine): not idle either.
                lastActivity = now
            } else {
                // Idle keep-alive, a client that stopped reading, or the end of lingering.
                close()
            }
        }
        if !closed { scheduleTimer(max(deadlineNow(), now + 1_000_000)) }
    }

    /// Whether the kernel's send queue for this socket got shorter since
    /// the last look (SIOCOUTQ): the client is reading, just slowly.
    private var lastSendQueue: Int32 = 0
    private func sendQueueShrank() -> Bool {
        let queued = sendQueueLength()
        defer { lastSendQueue = queued }
        return queued < lastSendQueue
    }

    private func sendQueueLength() -> Int32 {
        var queued: Int32 = 0
        return ioctl(fd, UInt(0x5411) /* SIOCOUTQ */, &queued) == 0 ? queued : 0
    }

    private func bytesWaiting() -> Bool {
        var available: Int32 = 0
        return ioctl(fd, UInt(FIONREAD), &available) == 0 && available > 0
    }

    private static func nanos(_ seconds: Double) -> UInt64 {
        UInt64(min(max(seconds, 0), 1e9) * 1e9)
    }

    private func deadlineNow() -> UInt64 {
        switch phase {
        case .lingering:
            return lingerDeadline
        case .head:
            if let started = headStarted, output.isEmpty, stream == nil {
                return started + Self.nanos(configuration.headerTimeout)
            }
            return lastActivity + Self.nanos(configuration.idleTimeout)
        case .body, .closing:
            return lastActivity + Self.nanos(configuration.idleTimeout)
        }
    }

    private func scheduleTimer(_ deadline: UInt64) {
        timerDeadline = deadline
        timer?.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline), leeway: .milliseconds(50))
    }

    // MARK: - Requests

    /// Answers what the buffered input allows, then sends.
    private func drive() {
        while !closed {
            process()
            if closed { return }
            guard flush() else { return }
            if output.isEmpty && stream == nil && closeAfterOutput {
                beginLingeringClose()
                return
            }
            if !stoppedForStream { break }
        }
        guard !closed else { return }
        if peerClosed && output.isEmpty && stream == nil {
            // The client is gone; nothing more can arrive.
            if phase == .body { sink?.abort(); sink = nil }
            close()
        }
    }

    private func process() {
        stoppedForStream = false
        while !closed {
            // Send what is queued before answering more: pipelined requests
            // must not pile up answers in memory.
            if stream != nil || output.count >= Self.streamAhead { stoppedForStream = true; return }
            if closeAfterOutput { return }
            switch phase {
            case .head:
                guard inStart < inEnd else { return }
                switch parser.parse(UnsafeRawBufferPointer(rebasing: input[inStart..<inEnd])) {
                case .incomplete:
                    if inStart == 0 && inEnd == input.count {
                        // The limits are smaller than the buffer, so this only
                        // happens with input the parser cannot use; never spin on it.
                        inEnd = 0
                        send(HTTPError(.headersTooLarge, "headers_too_large",
                                       "the request head does not fit in \(input.count) bytes", closeConnection: true).response)
                        return
                    }
                    if headStarted == nil {
                        headStarted = now
                        let deadline = deadlineNow()
                        if deadline < timerDeadline { scheduleTimer(deadline) }
                    }
                    return
                case .skip(let n):
                    inStart += n
                case .failure(let error):
                    headStarted = nil
                    inStart = inEnd
                    send(error.response)
                case .complete(let head, let consumed):
                    inStart += consumed
                    headStarted = nil
                    begin(head)
                }
            case .body:
                guard inStart < inEnd else { return }
                feedBody()
            case .closing, .lingering:
                return
            }
        }
    }

    private func begin(_ head: HTTPRequestHead) {
        request = RequestInfo(method: head.method, target: head.target, started: now,
                              keepAlive: head.keepAlive && !shuttingDown)
        if let length = head.contentLength, length > configuration.maxBodyBytes {
            send(HTTPError(.payloadTooLarge, "payload_too_large",
                           "the body is \(length) bytes; at most \(configuration.maxBodyBytes) are accepted",
                           closeConnection: true).response)
            return
        }
        switch context.handler.handle(head) {
        case .respond(var response):
            if head.hasBody {
                if head.expectsContinue || head.isChunked || (head.contentLength ?? 0) > Self.maxSkippedBody {
                    response.closeConnection = true
                } else {
                    decoder = BodyDecoder(contentLength: head.contentLength ?? 0, maxBytes: configuration.maxBodyBytes)
                    sink = nil
                    phase = .body
                }
            }
            send(response)
        case .receiveBody(let bodySink):
            guard head.hasBody else {
                send(bodySink.finish())
                return
            }
            if head.expectsContinue { output.append("HTTP/1.1 100 Continue\r\n\r\n") }
            decoder = head.isChunked
                ? BodyDecoder(chunkedWithMaxBytes: configuration.maxBodyBytes, maxTrailerBytes: configuration.maxHeaderBytes)
                : BodyDecoder(contentLength: head.contentLength ?? 0, maxBytes: configuration.maxBodyBytes)
            sink = bodySink
            phase = .body
        }
    }

    private func feedBody() {
        let available = UnsafeRawBufferPointer(rebasing: input[inStart..<inEnd])
        do {
            let target = sink
            let used = try decoder!.decode(available) { chunk in try target?.write(chunk) }
            inStart += used
            guard decoder!.isDone else { return }
            decoder = nil
            let finished = sink
            sink = nil
            if phase == .body { phase = .head }
            if let finished { send(finished.finish()) }
        } catch {
            sink?.abort()
            sink = nil
            decoder = nil
            phase = .head
            var response: HTTPResponse
            if let httpError = error as? HTTPError {
                response = httpError.response
            } else {
                context.logger.error("request body failed: \(error)")
                response = HTTPError(.internalServerError, "internal_error", "\(error)").response
            }
            response.closeConnection = true
            send(response)
        }
    }

    // MARK: - Responses

    /// Queues a response: head and (small) body into the output buffer.
    private func send(_ response: HTTPResponse) {
        let info = request
        request = nil
        let isHead = info?.method == .head
        let close = response.closeConnection || !(info?.keepAlive ?? false) || shuttingDown
        let code = response.status.code

        output.append("HTTP/1.1 ")
        output.append(decimal: Int64(code))
        output.append(" ")
        output.append(response.status.reason)
        output.append("\r\n")
        var hasLength = false
        for (name, value) in response.headers {
            if !hasLength && name.utf8.count == 14 && name.lowercased() == "content-length" { hasLength = true }
            output.append(name)
            output.append(": ")
            output.append(value)
            output.append("\r\n")
        }
        output.append("Date: ")
        output.append(HTTPDate.nowBytes())
        output.append("\r\nServer: larder\r\n")
        let bodyLength: Int64
        switch response.body {
        case .empty: bodyLength = 0
        case .bytes(let b): bodyLength = Int64(b.count)
        case .stream(_, let length): bodyLength = length
        }
        if !hasLength && code >= 200 && code != 204 && code != 304 {
            output.append("Content-Length: ")
            output.append(decimal: bodyLength)
            output.append("\r\n")
        }
        if close { output.append("Connection: close\r\n") }
        output.append("\r\n")

        var sentBytes: Int64 = 0
        switch response.body {
        case .empty:
            break
        case .bytes(let b):
            if !isHead { output.append(b); sentBytes = Int64(b.count) }
        case .stream(let s, let length):
            if isHead || length == 0 {
                s.close()
            } else {
                stream = s
                streamRemaining = length
                sentBytes = length
            }
        }
        if close {
            closeAfterOutput = true
            if phase != .body { phase = .closing }
            else { phase = .closing; decoder = nil; sink?.abort(); sink = nil }
        }
        if stream != nil {
            pendingLog = (info, code, sentBytes)
        } else {
            logRequest(info, status: code, bytes: sentBytes)
        }
    }

    private func logRequest(_ info: RequestInfo?, status: Int, bytes: Int64) {
        guard context.logger.enabled(.info) else { return }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - (info?.started ?? now)) / 1e6
        let ms = (elapsed * 100).rounded() / 100
        context.logger.info("\(info?.method.description ?? "-") \(info?.target ?? "-") \(status) \(bytes)B \(ms)ms")
    }

    /// Sends queued output and refills it from a streamed body. Returns true
    /// when everything is sent, false when waiting for the socket (or closed).
    private func flush() -> Bool {
        while true {
            while !output.isEmpty {
                let pending = output.unsent
                let n = Glibc.send(fd, pending.baseAddress!, pending.count, Int32(MSG_NOSIGNAL))
                if n > 0 {
                    output.consumed(n)
                    lastActivity = now
                    continue
                }
                let code = errno
                if n < 0 && code == EINTR { continue }
                if n < 0 && (code == EAGAIN || code == EWOULDBLOCK) {
                    // What the kernel holds now; the idle check compares against it.
                    lastSendQueue = sendQueueLength()
                    waitForWritable()
                    return false
                }
                context.logger.debug("connection \(fd): send failed, errno \(code)")
                close()
                return false
            }
            guard let s = stream else { break }
            do {
                while output.count < Self.streamAhead && streamRemaining > 0 {
                    let want = Int(min(Int64(64 * 1024), streamRemaining))
                    let n = try output.fill(max: want) { try s.read(into: $0) }
                    if n == 0 {
                        throw HTTPError(.internalServerError, "internal_error", "the body ended \(streamRemaining) bytes early")
                    }
                    streamRemaining -= Int64(n)
                }
            } catch {
                // Headers are out already: all that is left is to cut the connection.
                context.logger.error("response body of \(pendingLog?.info?.target ?? "?") failed: \(error)")
                s.close()
                stream = nil
                close()
                return false
            }
            if streamRemaining == 0 {
                s.close()
                stream = nil
                if let log = pendingLog { logRequest(log.info, status: log.status, bytes: log.bytes) }
                pendingLog = nil
            }
        }
        output.shrink(to: Self.outputCapacity)
        stopWaitingForWritable()
        let deadline = deadlineNow()
        if deadline < timerDeadline { scheduleTimer(deadline) }
        return true
    }

    private func compactInput() {
        guard inStart > 0 else { return }
        let live = inEnd - inStart
        if live > 0 { input.baseAddress!.copyMemory(from: input.baseAddress! + inStart, byteCount: live) }
        inStart = 0
        inEnd = live
    }

    // MARK: - Closing

    private func beginLingeringClose() {
        if peerClosed { close(); return }
        shutdown(fd, Int32(SHUT_WR))
        phase = .lingering
        lingerDeadline = now + min(Self.lingerNanos, Self.nanos(configuration.idleTimeout))
        scheduleTimer(lingerDeadline)
        if readSuspended, let rs = readSource { rs.resume(); readSuspended = false }
    }

    /// Graceful shutdown: close now if idle, else after the current answer.
    func beginShutdown() {
        queue.async { [self] in
            guard !closed else { return }
            shuttingDown = true
            if phase == .head && inStart == inEnd && output.isEmpty && stream == nil && request == nil && headStarted == nil {
                close()
            }
        }
    }

    /// Closes at once (shutdown after the grace period).
    func forceClose() {
        queue.async { [self] in close() }
    }

    private func close() {
        guard !closed else { return }
        closed = true
        sink?.abort()
        sink = nil
        stream?.close()
        stream = nil
        timer?.cancel()
        timer = nil
        if let rs = readSource {
            if readSuspended { rs.resume() }
            rs.cancel()
            readSource = nil
        }
        if let ws = writeSource {
            if writeSuspended { ws.resume() }
            ws.cancel()
            writeSource = nil
        }
        if liveSources == 0 { Glibc.close(fd) }
        onClose(self)
    }
}
