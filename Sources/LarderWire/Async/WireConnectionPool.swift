import Dispatch
import FoundationEssentials
import LarderSupport

/// Keep-alive `WireConnection`s to one server, reused most recently used
/// first, and the watchdog that ends exchanges idle past their timeout.
///
/// A request takes an idle connection or opens one (there is no cap on
/// connections in use: a long poll never makes another request wait); a
/// connection that ends its exchange cleanly goes back, up to
/// `maximumIdle`. A request that finds its reused connection closed by the
/// server before any answer is sent again once on a new connection, if it
/// never fully went out or is safe to repeat (curl does the same).
///
/// A host with several addresses (`localhost`: `::1`, `127.0.0.1`) is
/// tried address by address when a connection cannot be made.
///
/// Invariant: `idle`, `busy`, `addresses`, `isClosed` and the watchdog's
/// state are guarded by `lock`; no connection's lock is taken while it is
/// held except through `isReusable`/`close` (connections never call back
/// into the pool), so the order is always pool, then connection.
public final class WireConnectionPool: @unchecked Sendable {
    public let host: String
    public let port: Int
    public let maximumIdle: Int

    private let lock = Lock()
    /// The host's addresses once resolved, and the one connections go to
    /// (the last that worked).
    private var addresses: [WireAddress]?
    private var preferred = 0
    private var idle: [WireConnection] = []
    private var busy: [ObjectIdentifier: WireConnection] = [:]
    private var isClosed = false
    private var watchdog: DispatchSourceTimer?
    private var quietTicks = 0
    /// How often the watchdog looks; a timeout fires up to this late.
    private static let tick = DispatchTimeInterval.milliseconds(250)
    /// Quiet ticks (nothing in flight) before the watchdog stops.
    private static let quietTicksBeforeStop = 40

    public init(host: String, port: Int, maximumIdle: Int = 8) {
        self.host = host
        self.port = port
        self.maximumIdle = maximumIdle
    }

    deinit { close() }

    /// Sends `request` and hands its answer to `sink`. `idleTimeout`: how
    /// long the exchange may pass without a byte moving either way.
    /// `reuse`: false for a stream, whose connection is closed after it.
    public func perform(_ request: WireRequest, into sink: any ResponseSink, idleTimeout: Double,
                        reuse: Bool = true) async -> Result<Void, WireFailure> {
        var resent = false
        var addressesTried = 0
        while true {
            let connection: WireConnection
            let reused: Bool
            do {
                // A resend always goes on a new connection: idle ones went
                // idle together and may be closing together.
                (connection, reused) = try checkout(allowIdle: reuse && !resent)
            } catch .cannotConnect(let reason) {
                addressesTried += 1
                if moveToNextAddress(afterTrying: addressesTried) { continue }
                return .failure(.cannotConnect(reason))
            } catch {
                return .failure(error)
            }
            let result = await Self.exchange(on: connection, request, sink: sink, idleTimeout: idleTimeout)
            // Both ways below take the connection's lock (`isReusable`,
            // `close`), which the reader held while it filled `sink`: the
            // caller's reads of the sink are ordered after its writes in a way
            // ThreadSanitizer sees (the continuation's hand-off is inside the
            // concurrency runtime, which it does not instrument).
            switch result {
            case .success where reuse:
                checkin(connection)
                return result
            case .failure(.closedBeforeAnswer(let sent)) where reused && !resent && (!sent || request.isSafe):
                discard(connection)
                resent = true
            case .failure(.cannotConnect) where !reused:
                discard(connection)
                addressesTried += 1
                if !moveToNextAddress(afterTrying: addressesTried) { return result }
            default:
                discard(connection)
                return result
            }
        }
    }

    /// After a connection to the preferred address failed: prefers the next
    /// one and says whether this request should try it (not every address
    /// has been tried yet). When all have failed, they are resolved again
    /// next time (the server may have moved).
    private func moveToNextAddress(afterTrying tried: Int) -> Bool {
        lock.withLock {
            guard let count = addresses?.count, tried < count else {
                addresses = nil
                return false
            }
            preferred = (preferred + 1) % count
            return true
        }
    }

    /// Closes every connection; requests in flight end as cancelled.
    public func close() {
        let all = lock.withLock { () -> [WireConnection] in
            isClosed = true
            watchdog?.cancel()
            watchdog = nil
            defer {
                idle.removeAll()
                busy.removeAll()
            }
            return idle + Array(busy.values)
        }
        for connection in all { connection.close() }
    }

    /// How many connections are open and idle (for tests).
    public var idleCount: Int { lock.withLock { idle.count } }

    // MARK: - Connections

    private func checkout(allowIdle: Bool) throws(WireFailure) -> (WireConnection, reused: Bool) {
        let (reusable, stale, known) = lock.withLock { () -> (WireConnection?, [WireConnection], WireAddress?) in
            var stale: [WireConnection] = []
            var found: WireConnection?
            while allowIdle, found == nil, let candidate = idle.popLast() {
                if candidate.isReusable { found = candidate } else { stale.append(candidate) }
            }
            if let found { markBusy(found) }
            return (found, stale, addresses.map { $0[preferred % $0.count] })
        }
        for connection in stale { connection.close() }
        if let reusable { return (reusable, true) }
        let address: WireAddress
        if let known {
            address = known
        } else {
            let resolved = try WireAddress.resolve(host: host, port: port)
            address = lock.withLock {
                addresses = resolved
                preferred = 0
                return resolved[0]
            }
        }
        let connection = try WireConnection(to: address)
        let closedPool = lock.withLock { () -> Bool in
            if !isClosed { markBusy(connection) }
            return isClosed
        }
        if closedPool {
            connection.close()
            throw .cancelled
        }
        return (connection, false)
    }

    /// Lock held.
    private func markBusy(_ connection: WireConnection) {
        busy[ObjectIdentifier(connection)] = connection
        quietTicks = 0
        if watchdog == nil { startWatchdog() }
    }

    private func checkin(_ connection: WireConnection) {
        let keep = lock.withLock { () -> Bool in
            busy[ObjectIdentifier(connection)] = nil
            guard !isClosed, idle.count < maximumIdle, connection.isReusable else { return false }
            idle.append(connection)
            return true
        }
        if !keep { connection.close() }
    }

    private func discard(_ connection: WireConnection) {
        lock.withLock { _ = busy.removeValue(forKey: ObjectIdentifier(connection)) }
        connection.close()
    }

    // MARK: - Watchdog

    /// Lock held.
    private func startWatchdog() {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + Self.tick, repeating: Self.tick, leeway: .milliseconds(50))
        timer.setEventHandler { [weak self] in self?.watch() }
        watchdog = timer
        timer.resume()
    }

    private func watch() {
        let inFlight = lock.withLock { () -> [WireConnection] in
            if busy.isEmpty {
                quietTicks += 1
                if quietTicks >= Self.quietTicksBeforeStop {
                    watchdog?.cancel()
                    watchdog = nil
                }
            }
            return Array(busy.values)
        }
        let now = DispatchTime.now().uptimeNanoseconds
        for connection in inFlight { connection.expireIfIdle(now: now) }
    }

    /// One exchange on `connection`, ended as cancelled when the calling
    /// task is.
    private static func exchange(on connection: WireConnection, _ request: WireRequest, sink: any ResponseSink,
                                 idleTimeout: Double) async -> Result<Void, WireFailure> {
        let id = connection.makeExchangeID()
        return await withTaskCancellationHandler {
            // Unsafe (unchecked): `start` calls its completion exactly once.
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Void, WireFailure>, Never>) in
                connection.start(id, request, sink: sink, idleTimeout: idleTimeout) { continuation.resume(returning: $0) }
            }
        } onCancel: {
            connection.cancel(id)
        }
    }
}
