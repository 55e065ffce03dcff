// PGConnection's opening: libpq's connect handshake, polled on a pool thread, and the loop's watch of the socket.

import CLibPQ
import Dispatch
import FoundationEssentials
import LarderSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension PGConnection {
    /// Opens a connection. libpq's connect handshake (a few round trips) is
    /// polled with `poll(2)` on a pool thread, with `timeout` overall; once
    /// connected, everything runs on `loop`.
    static func connect(conninfo: String, timeout: Double, commandTimeout: Double, loop: PGEventLoop) async throws -> PGConnection {
        let connection = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PGConnection, Error>) in
            PostgresExecutor.runBlocking {
                let made = Result { try connectBlocking(conninfo: conninfo, timeout: timeout, commandTimeout: commandTimeout, loop: loop) }
                handOff.withLock {}
                continuation.resume(with: made)
            }
        }
        handOff.withLock {}
        return connection
    }

    private static func connectBlocking(conninfo: String, timeout: Double, commandTimeout: Double, loop: PGEventLoop) throws -> PGConnection {
        guard let pg = PQconnectStart(conninfo) else { throw PGError.connection("out of memory starting a connection") }
        let deadline = Clock.nowNanos() + Int64(timeout * 1e9)
        var status = PGRES_POLLING_WRITING
        while true {
            if PQstatus(pg) == CONNECTION_BAD {
                let message = errorMessage(pg)
                PQfinish(pg)
                throw PGError.connection(message)
            }
            if status == PGRES_POLLING_OK { break }
            if status == PGRES_POLLING_FAILED {
                let message = errorMessage(pg)
                PQfinish(pg)
                throw PGError.connection(message)
            }
            var fds = pollfd(fd: PQsocket(pg), events: Int16(status == PGRES_POLLING_READING ? POLLIN : POLLOUT), revents: 0)
            let left = Int32(max(0, (deadline - Clock.nowNanos()) / 1_000_000))
            if left == 0 || poll(&fds, 1, left) == 0 {
                PQfinish(pg)
                throw PGError.connection("no answer from the database within \(timeout) s")
            }
            status = PQconnectPoll(pg)
        }
        // Server notices ("terminating connection due to…") would go to
        // stderr; what they say reaches us as errors where it matters.
        PQsetNoticeProcessor(pg, { _, _ in }, nil)
        guard PQsetnonblocking(pg, 1) == 0 else {
            let message = errorMessage(pg)
            PQfinish(pg)
            throw PGError.connection(message)
        }
        let connection = PGConnection(pg: pg, commandTimeout: commandTimeout, loop: loop)
        connection.loop.sync { connection.startWatching() }
        return connection
    }

    static func errorMessage(_ pg: OpaquePointer?) -> String {
        guard let pg, let raw = PQerrorMessage(pg) else { return "unknown libpq error" }
        return String(cString: raw).trimmingWhitespaceAndNewlines()
    }

    /// The loop watches the socket (and holds this object) until `fail`.
    private func startWatching() {
        let fd = PQsocket(pg)
        guard loop.register(fd, self) else { return fail("the event loop cannot watch the socket (errno \(errno))") }
        registered = fd
    }
}
