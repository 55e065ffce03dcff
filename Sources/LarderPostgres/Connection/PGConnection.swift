import CLibPQ
import Dispatch
import Foundation
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection driven asynchronously: queries go out with
/// `PQsendQueryParams`, and Dispatch read and write sources on the
/// connection's socket feed `PQconsumeInput`/`PQflush`. A query in flight
/// holds a continuation, not a thread.
///
/// Every mutable field is guarded by `queue` (a serial queue targeting the
/// overcommit pool, so a reply is read even when the default pool's threads
/// are all waiting). One query at a time: the pool hands a connection to
/// one user until it is released.
final class PGConnection: @unchecked Sendable {
    private let queue = DispatchQueue(label: "larder.postgres.connection")
    private var pg: OpaquePointer?
    private var readSource: DispatchSourceRead?
    private var writeSource: DispatchSourceWrite?
    private var writeActive = false
    /// Sources not yet through their cancel handler; the connection is
    /// finished (its socket closed) when the last one is.
    private var liveSources = 0
    private var command: Command?
    private var brokenReason: String?
    /// Told of every `NOTIFY` on a channel this connection listens to.
    private var notificationHandler: (@Sendable (_ channel: String, _ payload: String) -> Void)?
    /// Told once when the connection breaks (server gone, socket error).
    private var breakHandler: (@Sendable (String) -> Void)?
    /// Longest a query may go without receiving a byte before the
    /// connection is given up (a database that stopped answering without
    /// closing); 0: no limit.
    let commandTimeout: Double

    private final class Command {
        let continuation: CheckedContinuation<PGResult, Error>
        let onRow: (@Sendable (PGRow) throws -> Void)?
        let sql: String
        let parameters: [PGValue]
        /// The prepared statement's name, while it is being prepared.
        var preparing: String?
        var result = PGResult()
        var error: Error?
        var timer: DispatchSourceTimer?
        /// Seconds without a byte before the connection is given up.
        var silence: Double = 0
        init(continuation: CheckedContinuation<PGResult, Error>, onRow: (@Sendable (PGRow) throws -> Void)?,
             sql: String, parameters: [PGValue]) {
            self.continuation = continuation
            self.onRow = onRow
            self.sql = sql
            self.parameters = parameters
        }
    }
    /// Statements prepared on this connection, by text: each is parsed and
    /// planned once per connection, not once per request.
    private var prepared: [String: String] = [:]
    /// The schema the connection's `search_path` names, as `use(schema:)`
    /// last set it; nil: not set yet. Touched only by the connection's one
    /// user at a time (the pool's checkout, or the listener's turn), never
    /// concurrently, so it needs no queue.
    private var searchPath: String?

    private init(pg: OpaquePointer, commandTimeout: Double) {
        self.pg = pg
        self.commandTimeout = commandTimeout
    }

    /// Opens a connection. libpq's connect handshake (a few round trips) is
    /// polled with `poll(2)` on a pool thread, with `timeout` overall; once
    /// connected, everything runs on Dispatch sources.
    static func connect(conninfo: String, timeout: Double, commandTimeout: Double) async throws -> PGConnection {
        let connection = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PGConnection, Error>) in
            PostgresExecutor.runBlocking {
                let made = Result { try connectBlocking(conninfo: conninfo, timeout: timeout, commandTimeout: commandTimeout) }
                handOff.withLock {}
                continuation.resume(with: made)
            }
        }
        handOff.withLock {}
        return connection
    }

    /// Orders the connection's making (on the connecting thread) before its
    /// first use (on the task's), in a way ThreadSanitizer sees: the
    /// continuation's own hand-off happens inside the concurrency runtime,
    /// which it does not instrument, and it once reported the first
    /// query's read of a field written by `init` as a race.
    private static let handOff = Lock()

    private static func connectBlocking(conninfo: String, timeout: Double, commandTimeout: Double) throws -> PGConnection {
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
        let connection = PGConnection(pg: pg, commandTimeout: commandTimeout)
        connection.queue.sync { connection.startSources() }
        return connection
    }

    static func errorMessage(_ pg: OpaquePointer?) -> String {
        guard let pg, let raw = PQerrorMessage(pg) else { return "unknown libpq error" }
        return String(cString: raw).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit {
        // The pool closes connections before dropping them; this is the
        // backstop for one dropped by an error path.
        if let pg, liveSources == 0 { PQfinish(pg) }
    }

    /// Why the connection is unusable; nil while it is good.
    var broken: String? { queue.sync { brokenReason } }

    func onNotification(_ handler: @escaping @Sendable (_ channel: String, _ payload: String) -> Void) {
        queue.sync { notificationHandler = handler }
    }

    func onBreak(_ handler: @escaping @Sendable (String) -> Void) {
        queue.sync {
            if let brokenReason { handler(brokenReason) } else { breakHandler = handler }
        }
    }

    /// Runs one statement (parameters `$1…`) and returns its rows, all in
    /// memory. With `onRow`, rows are handed over one at a time as they
    /// arrive (libpq's single-row mode) and none are kept: for results too
    /// large to hold. A database error throws `PGError.server`; a broken
    /// connection `PGError.connection`.
    /// `silence` replaces `commandTimeout` for this statement (a `COMMIT`,
    /// whose flush may legitimately take long).
    func query(_ sql: String, _ parameters: [PGValue] = [], silence: Double? = nil,
               onRow: (@Sendable (PGRow) throws -> Void)? = nil) async throws -> PGResult {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PGResult, Error>) in
            queue.async {
                let command = Command(continuation: continuation, onRow: onRow, sql: sql, parameters: parameters)
                command.silence = silence ?? self.commandTimeout
                self.start(command)
            }
        }
    }

    /// Points unqualified table names at `schema`'s tables (`SET
    /// search_path`), unless they already are: the stores of a database's
    /// namespaces share connections, one schema each. Never inside a
    /// transaction (a rollback would undo the `SET` but not this record of
    /// it). Statements prepared under another schema are planned again by
    /// the database on their next use, which it does when `search_path`
    /// changes.
    func use(schema: String) async throws {
        guard searchPath != schema else { return }
        searchPath = nil
        _ = try await query("SET search_path TO \"\(schema)\"")
        searchPath = schema
    }

    /// Closes the connection (any query in flight fails).
    func close() {
        queue.async { self.fail("closed") }
    }

    // MARK: - On `queue`

    private func startSources() {
        let fd = PQsocket(pg)
        let read = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        // Strong captures: the sources and this object let go of each other
        // when the last cancel handler has run (`sourceCancelled`).
        read.setEventHandler { self.readable() }
        read.setCancelHandler { self.sourceCancelled() }
        let write = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        write.setEventHandler { self.flush() }
        write.setCancelHandler { self.sourceCancelled() }
        liveSources = 2
        readSource = read
        writeSource = write
        read.resume()
        // The write source starts suspended: resumed only while output waits.
    }

    private func start(_ command: Command) {
        if let brokenReason {
            command.continuation.resume(throwing: PGError.connection(brokenReason))
            return
        }
        precondition(self.command == nil, "one query at a time on a connection")
        self.command = command
        if let name = prepared[command.sql] {
            send(command, statement: name)
        } else if command.parameters.isEmpty {
            // Without parameters (BEGIN, COMMIT, LISTEN, DDL): no statement to keep.
            send(command, statement: nil)
        } else {
            let name = "s\(prepared.count)"
            command.preparing = name
            guard PQsendPrepare(pg, name, command.sql, Int32(command.parameters.count), nil) == 1 else {
                fail(Self.errorMessage(pg))
                return
            }
        }
        guard self.command === command else { return }  // failed to send
        if command.silence > 0 {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + command.silence)
            timer.setEventHandler { [weak self, weak command] in
                guard let self, let command, self.command === command else { return }
                self.fail("the database sent nothing for \(command.silence) s")
            }
            timer.resume()
            command.timer = timer
        }
        flush()
    }

    /// Sends the statement itself: prepared (`statement`) or not.
    private func send(_ command: Command, statement: String?) {
        let parameters = command.parameters
        let sent = PGValue.withParameters(parameters) { values, lengths, formats in
            if let statement {
                return PQsendQueryPrepared(pg, statement, Int32(parameters.count), values, lengths, formats, 1)
            }
            return PQsendQueryParams(pg, command.sql, Int32(parameters.count), nil, values, lengths, formats, 1)
        }
        guard sent == 1 else {
            fail(Self.errorMessage(pg))
            return
        }
        if command.onRow != nil { PQsetSingleRowMode(pg) }
    }

    /// Sends what libpq holds; waits for the socket when it would block.
    private func flush() {
        guard pg != nil, brokenReason == nil else { return }
        switch PQflush(pg) {
        case 0: setWriteActive(false)
        case 1: setWriteActive(true)
        default: fail(Self.errorMessage(pg))
        }
    }

    private func setWriteActive(_ active: Bool) {
        guard active != writeActive, let writeSource else { return }
        writeActive = active
        if active { writeSource.resume() } else { writeSource.suspend() }
    }

    private func readable() {
        guard pg != nil, brokenReason == nil else { return }
        guard PQconsumeInput(pg) == 1 else {
            fail(Self.errorMessage(pg))
            return
        }
        // The answer is coming: the silence allowed starts again.
        if let command { command.timer?.schedule(deadline: .now() + command.silence) }
        drainNotifications()
        if command != nil { collectResults() }
        // Reading results parses further input: a NOTIFY that came in the
        // same packet is in libpq's list now, and no new readable event
        // would fetch it.
        drainNotifications()
        if brokenReason == nil && PQstatus(pg) == CONNECTION_BAD { fail(Self.errorMessage(pg)) }
        // Reading may have made room for output libpq still holds.
        if writeActive { flush() }
    }

    private func drainNotifications() {
        guard pg != nil else { return }
        while let notice = PQnotifies(pg) {
            let channel = String(cString: notice.pointee.relname)
            let payload = String(cString: notice.pointee.extra)
            PQfreemem(notice)
            notificationHandler?(channel, payload)
        }
    }

    private func collectResults() {
        while let command, PQisBusy(pg) == 0 {
            guard let result = PQgetResult(pg) else {
                if let name = command.preparing, command.error == nil {
                    // Prepared: now run it.
                    command.preparing = nil
                    prepared[command.sql] = name
                    send(command, statement: name)
                    flush()
                    continue
                }
                // The statement is done.
                self.command = nil
                command.timer?.cancel()
                if let error = command.error {
                    command.continuation.resume(throwing: error)
                } else {
                    command.continuation.resume(returning: command.result)
                }
                return
            }
            defer { PQclear(result) }
            switch PQresultStatus(result) {
            case PGRES_SINGLE_TUPLE:
                guard command.error == nil else { continue }
                do { try command.onRow?(PGRow(result: result, row: 0)) } catch { command.error = error }
            case PGRES_TUPLES_OK:
                command.result.append(result, keepRows: command.onRow == nil)
            case PGRES_COMMAND_OK:
                command.result.append(result, keepRows: false)
            case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR, PGRES_BAD_RESPONSE:
                if command.error == nil { command.error = PGError.server(result) }
            default:
                if command.error == nil { command.error = PGError.connection("unexpected result status \(PQresultStatus(result))") }
            }
        }
    }

    /// Marks the connection broken, fails the query in flight and stops
    /// the sources; the socket closes after the last cancel handler.
    private func fail(_ reason: String) {
        guard brokenReason == nil else { return }
        brokenReason = reason
        if let command {
            self.command = nil
            command.timer?.cancel()
            command.continuation.resume(throwing: PGError.connection(reason))
        }
        breakHandler?(reason)
        breakHandler = nil
        notificationHandler = nil
        // A suspended source must be resumed before it is cancelled.
        if let writeSource {
            if !writeActive { writeSource.resume() }
            writeActive = true
            writeSource.cancel()
        }
        readSource?.cancel()
        if liveSources == 0, let pg {
            PQfinish(pg)
            self.pg = nil
        }
    }

    private func sourceCancelled() {
        liveSources -= 1
        if liveSources == 0, let pg {
            PQfinish(pg)
            self.pg = nil
            readSource = nil
            writeSource = nil
        }
    }
}
