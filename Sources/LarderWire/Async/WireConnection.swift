import Dispatch
import FoundationEssentials
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// One keep-alive HTTP/1.1 connection that carries one exchange at a time
/// without holding a thread: a non-blocking socket, a Dispatch read source
/// that stays armed for the connection's life (so a server's close of an
/// idle connection is seen at once), and a write source armed only while a
/// request waits for room in the socket.
///
/// The caller's thread writes the request straight away (no queue hop); the
/// answer is read and parsed on `queue`; `completion` runs once per
/// exchange, on whichever of them ends it.
///
/// Invariants: every `var` is guarded by `lock`, taken by callers and by
/// the sources' handlers on `queue`. The sink is called with `lock` held and
/// must not call back into the connection; completions run after it is
/// released. The descriptor is closed only after both sources' cancel
/// handlers have run.
public final class WireConnection: @unchecked Sendable {
    public typealias Completion = @Sendable (Result<Void, WireFailure>) -> Void

    private struct Exchange {
        let id: UInt64
        let sink: any ResponseSink
        var parser: ResponseParser
        let completion: Completion
        /// The request head and body still to write, as one or two pieces.
        var head: [UInt8]
        var body: Data
        var written = 0
        var requestSent = false
        let idleTimeout: Double
        /// When a byte last moved, in `DispatchTime` nanoseconds.
        var lastActivity: UInt64
    }

    private static let receiveCapacity = 64 * 1024

    private let lock = Lock()
    private let fd: Int32
    private let queue: DispatchQueue
    private let address: WireAddress
    private var readSource: DispatchSourceRead?
    private var writeSource: DispatchSourceWrite?
    private var writeArmed = false
    private var connecting: Bool
    private var isClosed = false
    /// Cancel handlers still to run before the descriptor may be closed.
    private var pendingCancels = 0
    private var exchange: Exchange?
    /// An exchange cancelled before it started (its id).
    private var cancelledBeforeStart: UInt64?
    private var nextID: UInt64 = 0
    private var mustClose = false
    /// A write failed (the server closed or reset): nothing more is written.
    private var writeFailed = false
    /// Why connecting failed, when it did.
    private var connectFailure: WireFailure?
    private let receive = UnsafeMutableRawBufferPointer.allocate(byteCount: receiveCapacity, alignment: 16)
    private var receiveStart = 0
    private var receiveEnd = 0

    /// Starts connecting to `address` (the connection completes in the
    /// background; a request started meanwhile waits for it).
    public init(to address: WireAddress) throws(WireFailure) {
        self.address = address
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            receive.deallocate()
            throw .cannotConnect("socket: \(String(cString: strerror(errno)))")
        }
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        let result = address.withSockaddr { connect(fd, $0, $1) }
        let code = errno
        if result != 0 && code != EINPROGRESS {
            Glibc.close(fd)
            receive.deallocate()
            throw .cannotConnect("connect to \(address): \(String(cString: strerror(code)))")
        }
        self.fd = fd
        connecting = result != 0
        queue = DispatchQueue(label: "larder.wire.connection", target: .global())
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [self] in readable() }
        source.setCancelHandler { [self] in sourceCancelled() }
        pendingCancels = 1
        readSource = source
        source.resume()
    }

    deinit {
        receive.deallocate()
    }

    /// Whether the connection can carry another exchange: open, idle, and
    /// not told by the server (or its last answer's framing) to close.
    public var isReusable: Bool {
        lock.withLock { !isClosed && !mustClose && exchange == nil }
    }

    /// A fresh id for `start`, so that a cancellation is tied to its own
    /// exchange and not to a later one on the same connection.
    public func makeExchangeID() -> UInt64 {
        lock.withLock {
            nextID &+= 1
            return nextID
        }
    }

    /// Sends `request` and hands the answer to `sink`; `completion` says how
    /// it ended. `idleTimeout`: how long the exchange may go without a byte
    /// moving (enforced by `expireIfIdle`, which the pool's watchdog calls).
    public func start(_ id: UInt64, _ request: WireRequest, sink: any ResponseSink, idleTimeout: Double,
                      completion: @escaping Completion) {
        let failure: WireFailure? = lock.withLock {
            if cancelledBeforeStart == id { return .cancelled }
            if isClosed { return connectFailure ?? .closedBeforeAnswer(requestSent: false) }
            precondition(exchange == nil, "one exchange at a time on a WireConnection")
            exchange = Exchange(id: id, sink: sink, parser: ResponseParser(expectsBody: request.expectsBody),
                                completion: completion, head: request.headBytes(host: address.hostHeader),
                                body: request.body ?? Data(), idleTimeout: idleTimeout,
                                lastActivity: DispatchTime.now().uptimeNanoseconds)
            if !connecting { flush() }
            if exchange != nil, !writeArmed, !writeFailed, connecting || !exchange!.requestSent { armWrite() }
            return nil
        }
        if let failure { completion(.failure(failure)) }
        else { finishPending() }
    }

    /// Ends exchange `id` with `.cancelled` if it is still going (the
    /// connection closes: its answer may still come), or makes its `start`
    /// fail at once if it has not started.
    public func cancel(_ id: UInt64) {
        lock.withLock {
            if let exchange, exchange.id == id {
                end(.failure(.cancelled))
                closeLocked()
            } else if exchange == nil {
                cancelledBeforeStart = id
            }
        }
        finishPending()
    }

    /// Ends the exchange with `.timedOut` when nothing has moved for its
    /// idle timeout as of `now` (`DispatchTime` nanoseconds).
    public func expireIfIdle(now: UInt64) {
        lock.withLock {
            guard let exchange, now > exchange.lastActivity,
                  Double(now - exchange.lastActivity) / 1e9 >= exchange.idleTimeout else { return }
            end(.failure(.timedOut(seconds: exchange.idleTimeout)))
            closeLocked()
        }
        finishPending()
    }

    /// Closes the connection, failing an exchange in flight as cancelled.
    public func close() {
        lock.withLock {
            if exchange != nil { end(.failure(.cancelled)) }
            closeLocked()
        }
        finishPending()
    }

    // MARK: - Ending exchanges

    /// Completions of ended exchanges, called once `lock` is released.
    private var endedCompletions: [(Completion, Result<Void, WireFailure>)] = []

    /// Ends the current exchange (lock held); its completion is queued.
    private func end(_ result: Result<Void, WireFailure>) {
        guard let ended = exchange else { return }
        exchange = nil
        endedCompletions.append((ended.completion, result))
    }

    /// Runs the queued completions (lock not held).
    private func finishPending() {
        let ready = lock.withLock { () -> [(Completion, Result<Void, WireFailure>)] in
            defer { endedCompletions.removeAll(keepingCapacity: true) }
            return endedCompletions
        }
        for (completion, result) in ready { completion(result) }
    }

    // MARK: - Writing (lock held)

    /// Writes what the socket takes of the current request.
    private func flush() {
        guard var current = exchange, !current.requestSent, !writeFailed else { return }
        while true {
            let headLeft = current.head.count - min(current.written, current.head.count)
            let bodyWritten = max(0, current.written - current.head.count)
            let bodyLeft = current.body.count - bodyWritten
            if headLeft + bodyLeft == 0 {
                current.requestSent = true
                break
            }
            let n = current.head.withUnsafeBytes { head in
                current.body.withUnsafeBytes { body in
                    var pieces = [iovec](repeating: iovec(), count: 2)
                    var count = 0
                    if headLeft > 0 {
                        pieces[count] = iovec(iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress! + current.written), iov_len: headLeft)
                        count += 1
                    }
                    if bodyLeft > 0 {
                        pieces[count] = iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress! + bodyWritten), iov_len: bodyLeft)
                        count += 1
                    }
                    return pieces.withUnsafeMutableBufferPointer { iov -> (Int, Int32) in
                        var message = msghdr()
                        message.msg_iov = iov.baseAddress
                        message.msg_iovlen = count
                        let sent = sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
                        return (sent, sent < 0 ? errno : 0)
                    }
                }
            }
            if n.0 > 0 {
                current.written += n.0
                current.lastActivity = DispatchTime.now().uptimeNanoseconds
                continue
            }
            if n.1 == EINTR { continue }
            if n.1 == EAGAIN || n.1 == EWOULDBLOCK { break }
            // The server closed or reset the connection under the request.
            // It may have answered first (a 413, a 503 when busy): writing
            // stops, and the read side ends the exchange with that answer,
            // or with the close (`closedBeforeAnswer(requestSent: false)`).
            writeFailed = true
            break
        }
        exchange = current
    }

    private func armWrite() {
        if writeSource == nil {
            let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
            source.setEventHandler { [self] in writable() }
            source.setCancelHandler { [self] in sourceCancelled() }
            pendingCancels += 1
            writeSource = source
        }
        writeArmed = true
        writeSource!.resume()
    }

    private func disarmWrite() {
        // Once closed, the source is cancelled and must stay resumed for its
        // cancel handler to run.
        guard writeArmed, !isClosed else { return }
        writeArmed = false
        writeSource!.suspend()
    }

    private func writable() {
        lock.withLock {
            guard !isClosed else { return }
            if connecting {
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                if error != 0 {
                    connectFailure = .cannotConnect("connect to \(address): \(String(cString: strerror(error)))")
                    end(.failure(connectFailure!))
                    closeLocked()
                    return
                }
                connecting = false
            }
            flush()
            if exchange?.requestSent ?? true || writeFailed { disarmWrite() }
        }
        finishPending()
    }

    // MARK: - Reading (on `queue`)

    private func readable() {
        lock.withLock {
            guard !isClosed else { return }
            if receiveEnd == Self.receiveCapacity {
                // Only a head larger than the buffer leaves it full (the
                // parser takes every body byte): compact, or give up.
                guard receiveStart > 0 else {
                    end(.failure(.malformed("a response head over \(Self.receiveCapacity) bytes")))
                    closeLocked()
                    return
                }
                compact()
            }
            let n = recv(fd, receive.baseAddress! + receiveEnd, Self.receiveCapacity - receiveEnd, 0)
            if n > 0 {
                receiveEnd += n
                parseReceived()
            } else if n == 0 {
                peerClosed(errno: 0)
            } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                peerClosed(errno: errno)
            }
        }
        finishPending()
    }

    /// Feeds the received bytes to the current exchange's parser.
    private func parseReceived() {
        guard var current = exchange else {
            // Bytes nobody asked for: the connection cannot be trusted.
            closeLocked()
            return
        }
        current.lastActivity = DispatchTime.now().uptimeNanoseconds
        let used: Int
        do {
            used = try current.parser.consume(UnsafeRawBufferPointer(rebasing: receive[receiveStart..<receiveEnd]), into: current.sink)
        } catch {
            exchange = current
            end(.failure(error))
            closeLocked()
            return
        }
        receiveStart += used
        if receiveStart == receiveEnd {
            receiveStart = 0
            receiveEnd = 0
        }
        exchange = current
        guard current.parser.isComplete else { return }
        // Bytes after the answer, or a server that closes: not reusable.
        if receiveStart != receiveEnd || current.parser.head?.closesConnection == true || !current.requestSent {
            mustClose = true
        }
        end(.success(()))
        if mustClose { closeLocked() }
    }

    private func peerClosed(errno code: Int32) {
        if connecting {
            connectFailure = .cannotConnect("connect to \(address): \(String(cString: strerror(code == 0 ? ECONNREFUSED : code)))")
            end(.failure(connectFailure!))
        } else if var current = exchange {
            exchange = current
            if code == 0 && current.parser.closed() {
                end(.success(()))
            } else if !current.parser.started {
                end(.failure(.closedBeforeAnswer(requestSent: current.requestSent)))
            } else {
                end(.failure(.cutShort))
            }
        }
        closeLocked()
    }

    private func compact() {
        let count = receiveEnd - receiveStart
        if count > 0 { memmove(receive.baseAddress!, receive.baseAddress! + receiveStart, count) }
        receiveStart = 0
        receiveEnd = count
    }

    // MARK: - Closing (lock held)

    private func closeLocked() {
        guard !isClosed else { return }
        isClosed = true
        readSource?.cancel()
        if let writeSource {
            writeSource.cancel()
            // A suspended source's cancel handler runs only once resumed.
            if !writeArmed { writeSource.resume() }
        }
    }

    private func sourceCancelled() {
        let last = lock.withLock { () -> Bool in
            pendingCancels -= 1
            guard pendingCancels == 0 else { return false }
            readSource = nil
            writeSource = nil
            return true
        }
        if last { Glibc.close(fd) }
    }
}
