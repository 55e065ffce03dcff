// PGConnection's receiving, on the loop: reading the socket, its notifications, and the answers to the statement or pipeline in flight.

import CLibPQ
import Dispatch
import FoundationEssentials
import LarderSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension PGConnection {
    func socketReadable() { readable() }

    func readable() {
        guard pg != nil, brokenReason == nil else { return }
        guard PQconsumeInput(pg) == 1 else {
            fail(Self.errorMessage(pg))
            return
        }
        // The answer is coming: the silence allowed starts again.
        if let command { setDeadline(command.silence) }
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

    /// The command is answered; the connection takes the next.
    private func finish(_ command: Command) {
        self.command = nil
        setDeadline(0)
        inTransactionState = PQtransactionStatus(pg) != PQTRANS_IDLE
        if let error = command.error {
            command.continuation.resume(throwing: error)
        } else {
            command.continuation.resume(returning: command.results)
        }
    }

    /// Reads a pipeline's answers as far as they have come.
    private func collectPipelineResults(_ command: Command) {
        while PQisBusy(pg) == 0 {
            guard let result = PQgetResult(pg) else {
                // One statement's answers are done.
                command.slot += 1
                if let commitSilence = command.commitSilence, command.slot < command.slots.count,
                   command.slots[command.slot] == command.steps.count - 1 {
                    // Only the `COMMIT` is left: its flush may take longer.
                    command.silence = commitSilence
                    setDeadline(commitSilence)
                }
                continue
            }
            defer { PQclear(result) }
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_SYNC {
                guard PQexitPipelineMode(pg) == 1 else { return fail(Self.errorMessage(pg)) }
                return finish(command)
            }
            let step = command.slot < command.slots.count ? command.slots[command.slot] : Int.min
            if step < 0, step != Int.min, status == PGRES_COMMAND_OK {
                let sql = command.steps[-step - 1].sql
                prepared[sql] = command.preparedHere[sql]
                continue
            }
            switch status {
            // libpq (15) may keep the single-row mode of the statement before
            // the pipeline for its first query: its rows come one by one.
            case PGRES_TUPLES_OK where step >= 0, PGRES_SINGLE_TUPLE where step >= 0:
                command.results[step].append(result, keepRows: true)
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_SINGLE_TUPLE, PGRES_PIPELINE_ABORTED:
                if step >= 0 && status == PGRES_COMMAND_OK { command.results[step].append(result, keepRows: false) }
            case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR, PGRES_BAD_RESPONSE:
                if command.error == nil { command.error = PGError.server(result) }
            default:
                if command.error == nil {
                    command.error = PGError.connection("unexpected result status \(status) in a pipeline of \(command.steps.map(\.sql))")
                }
            }
        }
    }

    private func collectResults() {
        if let command, command.pipelined { return collectPipelineResults(command) }
        while let command, PQisBusy(pg) == 0 {
            guard let result = PQgetResult(pg) else {
                if let name = command.preparing, command.error == nil {
                    // Prepared: now run it.
                    command.preparing = nil
                    prepared[command.steps[0].sql] = name
                    send(command.steps[0], statement: name, singleRow: command.onRow != nil)
                    flush()
                    continue
                }
                // The statement is done.
                return finish(command)
            }
            defer { PQclear(result) }
            switch PQresultStatus(result) {
            case PGRES_SINGLE_TUPLE:
                guard command.error == nil else { continue }
                do { try command.onRow?(PGRow(result: result, row: 0)) } catch { command.error = error }
            case PGRES_TUPLES_OK:
                command.results[0].append(result, keepRows: command.onRow == nil)
            case PGRES_COMMAND_OK:
                command.results[0].append(result, keepRows: false)
            case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR, PGRES_BAD_RESPONSE:
                if command.error == nil { command.error = PGError.server(result) }
            default:
                if command.error == nil { command.error = PGError.connection("unexpected result status \(PQresultStatus(result))") }
            }
        }
    }
}
