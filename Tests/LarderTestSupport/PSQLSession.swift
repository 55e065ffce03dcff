import Foundation
import LarderWire

/// One `psql` process whose input the test writes statement by statement
/// and whose output it reads line by line: a database session that stays
/// open (a transaction held across the test's other steps).
package final class PSQLSession: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    /// Output read so far, not yet returned; guarded by `lock`.
    private var buffered = ""
    private let lock = NSCondition()

    init(psql: String, arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: psql)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            self.lock.lock()
            self.buffered += String(decoding: data, as: UTF8.self)
            self.lock.broadcast()
            self.lock.unlock()
        }
        try process.run()
    }

    deinit { close() }

    /// Sends `sql` (with `;` and a newline added).
    package func send(_ sql: String) {
        input.fileHandleForWriting.write(Data((sql + ";\n").utf8))
    }

    /// Waits until a line of output equals `line` (so a `SELECT 'marker'`
    /// says the statements before it ran); throws with what came instead.
    package func wait(forLine line: String, timeout: Double = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while !buffered.split(separator: "\n").contains(Substring(line)) {
            guard lock.wait(until: deadline) else {
                throw ClientError("psql session: no line \(line) in \(timeout) s; output: \(buffered)")
            }
        }
    }

    /// Ends the session (an open transaction rolls back).
    /// Begins a transaction that holds a transaction id, and returns once
    /// it has: every server's change feed is held back behind it (the mark)
    /// until `send("COMMIT")` or `close()`.
    package func beginHoldingFeedsBack() throws {
        send("BEGIN; SELECT pg_current_xact_id()")
        send("SELECT 'began'")
        try wait(forLine: "began")
    }

    package func close() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        output.fileHandleForReading.readabilityHandler = nil
    }
}
