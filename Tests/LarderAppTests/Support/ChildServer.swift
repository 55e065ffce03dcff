import Foundation
import LarderClient
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The built `larder` binary run as a child process, for what needs a real
/// process: SIGKILL crashes, the data directory lock, signals, peak RSS.
final class ChildServer {
    let process: Process
    let port: Int
    let dataDirectory: String
    private let stderrPipe: Pipe
    /// stderr, drained continuously so a chatty server never blocks on a full pipe.
    private let output = SharedText()
    /// Everything the server logged so far (stderr).
    var log: String { output.withLock { $0 } }

    /// The `larder` executable next to the test bundle (`swift build` puts both in one folder).
    static var binaryPath: String {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var dir = exe.deletingLastPathComponent()
        // Linux test bundles are `<bin>/LarderPackageTests.xctest`.
        if dir.lastPathComponent.hasSuffix(".xctest") { dir = dir.deletingLastPathComponent() }
        return dir.appendingPathComponent("larder").path
    }

    init(dataDirectory: String, arguments: [String] = [], environment: [String: String] = [:],
         waitUntilListening: Bool = true) throws {
        self.dataDirectory = dataDirectory
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binaryPath)
        process.arguments = ["serve", "--port", "0", "--data-dir", dataDirectory] + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        self.stderrPipe = pipe
        self.process = process
        guard FileManager.default.isExecutableFile(atPath: Self.binaryPath) else {
            throw ClientError("no larder binary at \(Self.binaryPath); run `swift build` first")
        }
        let output = self.output
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil; output.end(); return }
            output.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
        guard waitUntilListening else { port = 0; return }
        var found: Int? = nil
        let deadline = Date().addingTimeInterval(30)
        while found == nil && Date() < deadline && process.isRunning {
            let text = output.withLock { $0 }
            if let range = text.range(of: #"listening on http://[^ ]+:(\d+) "#, options: .regularExpression) {
                found = Int(text[range].split(separator: ":").last!.trimmingCharacters(in: .whitespaces))
            } else {
                usleep(10_000)
            }
        }
        guard let port = found else {
            process.terminate()
            throw ClientError("larder did not start: \(output.withLock { $0 })")
        }
        self.port = port
    }

    /// Reads what the child wrote to stderr until it exits.
    func waitForExit() -> Int32 {
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

    func kill(_ signal: Int32) { Glibc.kill(process.processIdentifier, signal) }

    /// Peak resident memory so far, in KiB (VmHWM).
    func peakRSSKiB() -> Int? { statusKiB("VmHWM:") }

    /// Resident memory now, in KiB (VmRSS).
    func rssKiB() -> Int? { statusKiB("VmRSS:") }

    private func statusKiB(_ field: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(field) {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
        }
        return nil
    }

    func client() -> LarderClient { LarderClient(port: port) }

    deinit {
        if process.isRunning {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// Text appended from one thread and read from another.
final class SharedText: Sendable {
    private let text = Mutex<String>("")
    private let done = Mutex(false)
    func withLock<T>(_ body: (inout String) -> T) -> T { text.withLock { body(&$0) } }
    /// The writer closed its end: nothing more will come.
    func end() { done.withLock { $0 = true } }
    var ended: Bool { done.withLock { $0 } }
}
