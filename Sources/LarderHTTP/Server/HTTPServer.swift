import Dispatch
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP/1.1 server: a non-blocking listening socket whose read source
/// accepts connections, each handed to a `HTTP1Session`.
public final class HTTPServer: @unchecked Sendable {
    public let configuration: HTTPServerConfiguration
    private let context: ServerContext
    private let acceptQueue = DispatchQueue(label: "larder.http.accept")
    // Confined to acceptQueue.
    private var listener: ListeningSocket?
    private var acceptSource: DispatchSourceRead?
    private var acceptPaused = false
    private let connections = Locked<[ObjectIdentifier: HTTP1Session]>([:])
    private let boundPort = Locked<Int>(0)
    private let cutAtGrace = Locked<Int>(0)

    /// `metrics` is where the server counts requests, bytes and connections.
    public init(configuration: HTTPServerConfiguration, handler: HTTPRequestHandler, logger: Logger,
                metrics: HTTPServerMetrics = HTTPServerMetrics()) {
        self.configuration = configuration
        self.context = ServerContext(configuration: configuration, handler: handler, logger: logger, metrics: metrics)
    }

    public var metrics: HTTPServerMetrics { context.metrics }

    /// The port the server listens on (useful with port 0).
    public var port: Int { boundPort.withLock { $0 } }

    /// Open connections right now.
    public var connectionCount: Int { connections.withLock { $0.count } }

    /// Connections `shutdown` closed because they were still busy when the
    /// grace ran out: 0 when every one ended on its own (what a stop that
    /// waits for nothing it should not looks like, whatever the clock says).
    public var connectionsCutAtShutdown: Int { cutAtGrace.withLock { $0 } }

    /// Binds and starts accepting. Throws `SocketError` when it cannot bind.
    public func start() throws {
        let socket = try ListeningSocket(host: configuration.host, port: configuration.port, backlog: configuration.backlog)
        boundPort.withLock { $0 = socket.port }
        acceptQueue.sync {
            listener = socket
            let source = DispatchSource.makeReadSource(fileDescriptor: socket.fd, queue: acceptQueue)
            source.setEventHandler { [self] in acceptPending() }
            source.setCancelHandler { Glibc.close(socket.fd) }
            acceptSource = source
            source.resume()
        }
    }

    private func acceptPending() {
        guard let listener else { return }
        while true {
            let fd: Int32
            do {
                guard let accepted = try listener.accept() else { return }
                fd = accepted
            } catch let error as SocketError {
                // Out of file descriptors and the like: pause a moment
                // instead of spinning on a listener that stays readable.
                context.logger.error("accept: \(error)")
                pauseAccepting()
                return
            } catch {
                return
            }
            let open = connections.withLock { $0.count }
            if open >= configuration.maxConnections && !evictLongestIdle() {
                rejectBusy(fd)
                continue
            }
            let metrics = context.metrics
            let connection = HTTP1Session(fd: fd, context: context) { [weak self] closed in
                metrics.connectionClosed()
                self?.connections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(closed)) }
            }
            metrics.connectionOpened()
            connections.withLock { $0[ObjectIdentifier(connection)] = connection }
            connection.start()
        }
    }

    private func pauseAccepting() {
        guard !acceptPaused, let source = acceptSource else { return }
        acceptPaused = true
        source.suspend()
        acceptQueue.asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in
            if acceptPaused, let s = acceptSource { acceptPaused = false; s.resume() }
        }
    }

    /// At the connection cap: closes the connection idle the longest (one
    /// that has sent nothing yet, or a keep-alive one between requests), as
    /// nginx reuses its idle connections, so that silent or idle sockets can
    /// never lock other clients out. False when every connection has a
    /// request in flight (watches, event streams and parked requests are
    /// never idle). The new connection is taken at once: until the chosen
    /// one has closed on its own queue the count is one over the cap.
    /// O(connections), only at the cap.
    private func evictLongestIdle() -> Bool {
        // A few looks at most: each lost race means a connection was busy
        // or idle anew a moment ago, and the cap is not worth spinning on.
        for _ in 0..<4 {
            let oldest = connections.withLock { open -> (HTTP1Session, UInt64)? in
                var best: (HTTP1Session, UInt64)?
                for session in open.values {
                    let since = session.idleSince.load(ordering: .relaxed)
                    if since != HTTP1Session.busy && since < (best?.1 ?? .max) { best = (session, since) }
                }
                return best
            }
            guard let (session, since) = oldest else { return false }
            // Lost a race with its own queue (it became busy, or idle
            // again at a later time): look again.
            if session.evict(idleSince: since) {
                context.metrics.connectionEvicted()
                return true
            }
        }
        return false
    }

    /// Over the connection limit: a best-effort 503 and close.
    private func rejectBusy(_ fd: Int32) {
        let body = "{\"error\":\"too_many_connections\",\"message\":\"the server already has \(configuration.maxConnections) open connections\"}"
        let text = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\nRetry-After: 1\r\n\r\n" + body
        let sent = Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
        // End our side, and drop the request bytes already here: closing with
        // unread input would send a reset, which can make the client discard
        // the 503 before reading it. (Nothing waits for bytes still to come,
        // and at most 64 KiB is drained: a client cannot hold the accept queue.)
        Glibc.shutdown(fd, Int32(SHUT_WR))
        var scratch = [UInt8](repeating: 0, count: 4096)
        var reads = 0
        while reads < 16, scratch.withUnsafeMutableBytes({ Glibc.recv(fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {
            reads += 1
        }
        Glibc.close(fd)
        let meter = context.metrics.shardForNewConnection()
        meter.answered(nil, status: 503, nanos: 0)
        if sent > 0 { meter.sent(sent) }
        context.logger.warning("connection refused: \(configuration.maxConnections) connections are open")
    }

    /// Stops accepting, lets in-flight requests finish (up to the grace
    /// period), then closes what is left. Blocks until done.
    public func shutdown() {
        acceptQueue.sync {
            if let source = acceptSource {
                if acceptPaused { source.resume(); acceptPaused = false }
                source.cancel()
            }
            acceptSource = nil
            listener = nil
        }
        for connection in connections.withLock({ Array($0.values) }) { connection.beginShutdown() }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(configuration.shutdownGrace * 1e9)
        while connectionCount > 0 && DispatchTime.now().uptimeNanoseconds < deadline {
            usleep(10_000)
        }
        let left = connections.withLock { Array($0.values) }
        if !left.isEmpty {
            context.logger.warning("closing \(left.count) connections still busy after \(configuration.shutdownGrace) s")
            cutAtGrace.withLock { $0 += left.count }
            for connection in left { connection.forceClose() }
            while connectionCount > 0 { usleep(1_000) }
        }
    }
}

/// What every connection shares with its server.
final class ServerContext: Sendable {
    let configuration: HTTPServerConfiguration
    let handler: HTTPRequestHandler
    let logger: Logger
    let metrics: HTTPServerMetrics

    init(configuration: HTTPServerConfiguration, handler: HTTPRequestHandler, logger: Logger, metrics: HTTPServerMetrics) {
        self.configuration = configuration
        self.handler = handler
        self.logger = logger
        self.metrics = metrics
    }
}
