import Foundation
import LarderSupport
import LarderWire
#if canImport(Glibc)
import Glibc
#endif

/// The built `larder` binary run as a child process, for what needs a real
/// process: SIGKILL crashes, the data directory lock, signals, peak RSS.
/// It finds the server as a harness would: the first line on stdout is its URL.
package final class ChildServer {
    package let process: Process
    package let port: Int
    /// nil when the server chose its own (`--ephemeral`).
    package let dataDirectory: String?
    private let stderrPipe: Pipe
    private let stdoutPipe: Pipe
    /// stderr, drained continuously so a chatty server never blocks on a full pipe.
    private let output = SharedText()
    private let standardOutput = SharedText()
    /// Everything the server logged so far (stderr).
    package var log: String { output.withLock { $0 } }
    /// Everything the server wrote to stdout so far.
    package var stdout: String { standardOutput.withLock { $0 } }

    /// The `larder` executable next to the test bundle (`swift build` puts both in one folder).
    package static var binaryPath: String { productPath("larder") }

    /// The built executable `name` (`larder`, `LarderCounterWorker`) next to the test bundle.
    package static func productPath(_ name: String) -> String {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var dir = exe.deletingLastPathComponent()
        // Linux test bundles are `<bin>/LarderPackageTests.xctest`.
        if dir.lastPathComponent.hasSuffix(".xctest") { dir = dir.deletingLastPathComponent() }
        return dir.appendingPathComponent(name).path
    }

    /// `dataDirectory` nil passes no `--data-dir` (for `--ephemeral`). `--port 0` comes first, so
    /// `arguments` may name another port. `executable` is another copy of the binary,
    /// `directory` the working directory (a binary moved away from the package).
    /// `launcher` runs the binary (`ip netns exec NAME`, which execs it, so
    /// the process is still the server's own).
    package init(dataDirectory: String?, arguments: [String] = [], environment: [String: String] = [:],
         waitUntilListening: Bool = true, executable: String = ChildServer.binaryPath, directory: String? = nil,
         launcher: [String] = []) throws {
        self.dataDirectory = dataDirectory
        let process = Process()
        process.executableURL = URL(fileURLWithPath: launcher.first ?? executable)
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.arguments = (launcher.isEmpty ? [] : Array(launcher.dropFirst()) + [executable])
            + ["serve", "--port", "0"] + (dataDirectory.map { ["--data-dir", $0] } ?? []) + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let pipe = Pipe(), outPipe = Pipe()
        process.standardError = pipe
        process.standardOutput = outPipe
        self.stderrPipe = pipe
        self.stdoutPipe = outPipe
        self.process = process
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw ClientError("no larder binary at \(executable); run `swift build` first")
        }
        output.collect(pipe.fileHandleForReading)
        standardOutput.collect(outPipe.fileHandleForReading)
        try process.run()
        guard waitUntilListening else { port = 0; return }
        var found: Int? = nil
        let deadline = Date().addingTimeInterval(30)
        while found == nil && Date() < deadline && process.isRunning {
            if let url = Self.firstLine(standardOutput.withLock { $0 }) {
                found = Self.port(of: url)
                if found == nil { break }
            } else {
                usleep(10_000)
            }
        }
        guard let port = found else {
            process.terminate()
            throw ClientError("larder did not start (stdout: \(standardOutput.withLock { $0 })): \(output.withLock { $0 })")
        }
        self.port = port
    }

    /// The first complete line of `text`, if it has one.
    package static func firstLine(_ text: String) -> String? {
        guard let newline = text.firstIndex(of: "\n") else { return nil }
        return String(text[..<newline])
    }

    /// The port of `http://127.0.0.1:PORT` (nil for anything else).
    package static func port(of url: String) -> Int? {
        guard url.hasPrefix("http://"), let colon = url.lastIndex(of: ":") else { return nil }
        return Int(url[url.index(after: colon)...])
    }

    /// The data directory the server named at start-up (its own with
    /// `--ephemeral`). Waits up to 5 s for the line: stderr is read on its
    /// own, so it may come in after the URL on stdout.
    package var loggedDataDirectory: String? {
        let deadline = Date().addingTimeInterval(5)
        while true {
            let text = log
            if let range = text.range(of: #"with data in [^\n]+\n"#, options: .regularExpression) {
                return String(text[range].dropFirst("with data in ".count).dropLast())
            }
            if Date() > deadline || !process.isRunning { return nil }
            usleep(5_000)
        }
    }

    /// Reads what the child wrote to stderr until it exits.
    package func waitForExit() -> Int32 {
        process.waitUntilExit()
        // Let the last stderr bytes arrive: until the pipe ends, or (when a child
        // spawned meanwhile inherited its write end) the log is quiet for 300 ms;
        // 5 s at most. A fixed 50 ms lost the message on a loaded machine.
        let deadline = Date().addingTimeInterval(5)
        var last = log, quietSince = Date()
        while !output.ended && Date() < deadline {
            usleep(5_000)
            let now = log
            if now != last { last = now; quietSince = Date() }
            if !now.isEmpty && Date().timeIntervalSince(quietSince) > 0.3 { break }
        }
        return process.terminationStatus
    }

    package func kill(_ signal: Int32) { Glibc.kill(process.processIdentifier, signal) }

    /// Peak resident memory so far, in KiB (VmHWM).
    package func peakRSSKiB() -> Int? { statusKiB("VmHWM:") }

    /// Resident memory now, in KiB (VmRSS).
    package func rssKiB() -> Int? { statusKiB("VmRSS:") }

    private func statusKiB(_ field: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(field) {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
        }
        return nil
    }

    package func client() -> WireClient { WireClient(port: port) }

    deinit {
        if process.isRunning {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
