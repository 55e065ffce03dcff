import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs another program to the end: its exit status, its stdout and stderr
/// (both read while it runs, so neither pipe fills up), killed with SIGKILL
/// at the deadline. The one process runner of the tests.
package enum ProcessRunner {
    package struct Result {
        package let status: Int32
        package let stdout: [UInt8]
        package let stderr: String
        /// Killed at the deadline.
        package let timedOut: Bool

        package var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// `executable arguments...` with `stdin`, in `directory`, with
    /// `environment` over this process's own.
    package static func run(_ executable: String, _ arguments: [String], stdin: [UInt8]? = nil,
                    environment: [String: String] = [:], directory: String? = nil,
                    timeout: Double = 120) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let out = Pipe(), err = Pipe()
        let input = stdin == nil ? nil : Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input ?? FileHandle.nullDevice
        // Every pipe end is closed here once used, not when Foundation lets
        // go of the Process: a full run once held 1,400 pipe descriptors,
        // and Process.run itself over-reads /proc/self/fd's listing when it
        // is that long (swift-corelibs-foundation #5472), which crashed the
        // test process twice.
        defer {
            try? out.fileHandleForReading.close()
            try? err.fileHandleForReading.close()
        }
        try process.run()
        let killed = Flag()
        let watchdog = DispatchWorkItem {
            guard process.isRunning else { return }
            killed.set()
            kill(process.processIdentifier, SIGKILL)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        let collected = Collected()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            collected.error = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        if let stdin, let input {
            group.enter()
            DispatchQueue.global().async {
                input.fileHandleForWriting.write(Data(stdin))
                try? input.fileHandleForWriting.close()
                group.leave()
            }
        }
        let output = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        watchdog.cancel()
        return Result(status: process.terminationStatus, stdout: Array(output),
                      stderr: String(decoding: collected.error, as: UTF8.self), timedOut: killed.isSet)
    }

    /// The same, waited for on a thread of its own: a test that waits minutes
    /// for a child (a browser run, schemathesis) must not hold one of Swift
    /// Testing's few cooperative threads meanwhile, or async tests elsewhere
    /// in the run stall until it ends.
    package static func run(_ executable: String, _ arguments: [String], stdin: [UInt8]? = nil,
                    environment: [String: String] = [:], directory: String? = nil,
                    timeout: Double = 120) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Swift.Result {
                    try run(executable, arguments, stdin: stdin, environment: environment, directory: directory, timeout: timeout)
                })
            }
        }
    }

    private final class Collected: @unchecked Sendable { var error = Data() }

    /// Set by the watchdog's thread, read by the runner's.
    private final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        func set() { lock.lock(); value = true; lock.unlock() }
        var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    }
}
