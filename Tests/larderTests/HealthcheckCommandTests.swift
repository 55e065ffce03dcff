import Foundation
import LarderTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `larder healthcheck`: what the Docker image's HEALTHCHECK runs (the
/// runtime image has no curl). Exit 0 only for a 200 from /healthz.
@Suite(.blockingLane) struct HealthcheckCommandTests {
    static func healthcheck(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String, error: String) {
        // `env -i` so that the test process's own LARDER_* variables cannot leak in.
        let assignments = environment.map { "\($0.key)=\($0.value)" }.sorted()
        let (status, output, error) = try StoreTestSupport.run("/usr/bin/env", ["-i"] + assignments + [ChildServer.binaryPath, "healthcheck"] + arguments)
        return (status, String(decoding: output, as: UTF8.self), error)
    }

    @Test func aHealthyServerIsZero() throws {
        let server = try TestServer()
        defer { server.stop() }
        let result = try Self.healthcheck(["--url", "http://127.0.0.1:\(server.port)/healthz"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("answered 200"))
    }

    @Test func theDefaultTargetComesFromTheContainersEnvironment() throws {
        let server = try TestServer()
        defer { server.stop() }
        // The image sets LARDER_HOST=0.0.0.0 (bind everywhere): the check goes to loopback.
        let result = try Self.healthcheck([], environment: ["LARDER_HOST": "0.0.0.0", "LARDER_PORT": "\(server.port)"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("http://127.0.0.1:\(server.port)/healthz"))
        // A URL without a path checks /healthz.
        #expect(try Self.healthcheck(["--url", "http://127.0.0.1:\(server.port)"]).status == 0)
    }

    @Test func anythingButA200IsOne() throws {
        let server = try TestServer()
        defer { server.stop() }
        let notFound = try Self.healthcheck(["--url", "http://127.0.0.1:\(server.port)/no-such-endpoint"])
        #expect(notFound.status == 1)
        #expect(notFound.error.contains("answered 404"), "\(notFound.error)")

        let port = server.port
        server.stop()
        let refused = try Self.healthcheck(["--url", "http://127.0.0.1:\(port)/healthz"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("connect"), "\(refused.error)")
    }

    @Test func aServerThatNeverAnswersFailsWithinTheTimeout() throws {
        // A listening socket that is never accepted: the connect succeeds, no answer comes.
        let listener = try SilentListener()
        let port = listener.port
        let started = Date()
        let result = try Self.healthcheck(["--url", "http://127.0.0.1:\(port)/healthz", "--timeout", "1"])
        #expect(result.status != 0)
        #expect(Date().timeIntervalSince(started) < 10)
    }

    @Test func aURLItCannotUseIsAUsageError() throws {
        let result = try Self.healthcheck(["--url", "https://127.0.0.1/healthz"])
        #expect(result.status == 64)
        #expect(result.error.contains("--url must look like http://host[:port][/path]"))
    }

    /// The stop signals are blocked from the first instruction so that the
    /// server takes them with `sigwait`; `larder healthcheck` inherited the
    /// mask and waits for no signal, so Ctrl-C or a supervisor's SIGTERM did
    /// nothing: it ran on until its own `--timeout` (SIGALRM).
    @Test func healthcheckStopsOnSIGTERMAndSIGINT() throws {
        // A listening socket that is never accepted: the check waits for an answer.
        let listener = try SilentListener()
        let port = listener.port
        for signal in [SIGTERM, SIGINT] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: ChildServer.binaryPath)
            process.arguments = ["healthcheck", "--url", "http://127.0.0.1:\(port)/healthz", "--timeout", "30"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(500_000)   // connected, waiting for the answer
            kill(process.processIdentifier, signal)
            // Well before its own --timeout 30 would end it.
            let deadline = Date().addingTimeInterval(20)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            let ranOn = process.isRunning
            if ranOn { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
            #expect(!ranOn, "signal \(signal): the healthcheck ran on for 20 s")
            #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == signal,
                    "signal \(signal): ended by \(process.terminationReason == .exit ? "exit" : "signal") \(process.terminationStatus)")
        }
    }
}
