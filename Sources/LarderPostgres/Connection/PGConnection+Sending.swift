// PGConnection's sending, on the loop: a statement alone (prepared first if need be) or a pipeline, and flushing what libpq holds.

import CLibPQ
import Dispatch
import FoundationEssentials
import LarderSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension PGConnection {
    func socketWritable() { flush() }

    func start(_ command: Command) {
        if let brokenReason {
            command.continuation.resume(throwing: PGError.connection(brokenReason))
            return
        }
        precondition(self.command == nil, "one query at a time on a connection")
        self.command = command
        if command.pipelined {
            sendPipeline(command)
        } else if let name = prepared[command.steps[0].sql] {
            send(command.steps[0], statement: name, singleRow: command.onRow != nil)
        } else if command.steps[0].parameters.isEmpty {
            // Without parameters (BEGIN, COMMIT, LISTEN, DDL): no statement to keep.
            send(command.steps[0], statement: nil, singleRow: command.onRow != nil)
        } else {
            let name = nextStatementName()
            command.preparing = name
            guard PQsendPrepare(pg, name, command.steps[0].sql, Int32(command.steps[0].parameters.count), nil) == 1 else {
                fail(Self.errorMessage(pg))
                return
            }
        }
        guard self.command === command else { return }  // failed to send
        setDeadline(command.silence)
        flush()
    }

    /// Sends the statement itself: prepared (`statement`) or not. Returns
    /// false when libpq refused it (the connection has failed).
    @discardableResult
    func send(_ step: Statement, statement: String?, singleRow: Bool = false) -> Bool {
        let parameters = step.parameters
        let sent = PGValue.withParameters(parameters) { values, lengths, formats in
            if let statement {
                return PQsendQueryPrepared(pg, statement, Int32(parameters.count), values, lengths, formats, 1)
            }
            return PQsendQueryParams(pg, step.sql, Int32(parameters.count), nil, values, lengths, formats, 1)
        }
        guard sent == 1 else {
            fail(Self.errorMessage(pg))
            return false
        }
        if singleRow { PQsetSingleRowMode(pg) }
        return true
    }

    /// Queues every step (preparing those not prepared yet, in the same
    /// pipeline) and a sync point after them.
    private func sendPipeline(_ command: Command) {
        guard PQenterPipelineMode(pg) == 1 else { return fail(Self.errorMessage(pg)) }
        for (i, step) in command.steps.enumerated() {
            if command.commitSilence != nil && i == command.steps.count - 1 && i > 0 {
                // The answers so far go out before the `COMMIT` runs (see `commitSilence`).
                guard PQsendFlushRequest(pg) == 1 else { return fail(Self.errorMessage(pg)) }
            }
            var name = prepared[step.sql] ?? command.preparedHere[step.sql]
            if name == nil && !step.parameters.isEmpty {
                let made = nextStatementName()
                guard PQsendPrepare(pg, made, step.sql, Int32(step.parameters.count), nil) == 1 else {
                    return fail(Self.errorMessage(pg))
                }
                command.preparedHere[step.sql] = made
                command.slots.append(-(i + 1))
                name = made
            }
            guard send(step, statement: name) else { return }
            command.slots.append(i)
        }
        guard PQpipelineSync(pg) == 1 else { return fail(Self.errorMessage(pg)) }
    }

    /// Sends what libpq holds; waits for the socket when it would block.
    func flush() {
        guard pg != nil, brokenReason == nil else { return }
        switch PQflush(pg) {
        case 0: setWriteActive(false)
        case 1: setWriteActive(true)
        default: fail(Self.errorMessage(pg))
        }
    }

    private func setWriteActive(_ active: Bool) {
        guard active != writeActive, let registered else { return }
        writeActive = active
        loop.setWriteInterest(registered, active)
    }
}
