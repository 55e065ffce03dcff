import Foundation
import LarderTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The README's shell examples, run with bash and curl against a real
/// server (its `localhost:8080` replaced by the server's address), so the
/// documentation cannot drift from what the server does.
@Suite struct ReadmeExampleTests {
    /// The fenced block after `<!-- example: name -->` (or `output:`).
    static func block(_ marker: String) throws -> String {
        let readme = try String(contentsOfFile: Repository.path("README.md"), encoding: .utf8)
        guard let tag = readme.range(of: "<!-- \(marker) -->"),
              let fence = readme.range(of: "```", range: tag.upperBound..<readme.endIndex),
              let lineEnd = readme.range(of: "\n", range: fence.upperBound..<readme.endIndex),
              let close = readme.range(of: "```", range: lineEnd.upperBound..<readme.endIndex) else {
            throw ExampleError("no block marked \(marker) in README.md")
        }
        return String(readme[lineEnd.upperBound..<close.lowerBound])
    }

    /// Starts `bash -c script` with the server's address in place of localhost:8080.
    static func start(_ script: String, port: Int) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script.replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(port)")]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, out)
    }

    static func run(_ script: String, port: Int) throws -> String {
        let (process, out) = try start(script, port: port)
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ExampleError("the example exited with \(process.terminationStatus)") }
        return String(decoding: data, as: UTF8.self)
    }

    static func ids(_ text: String) -> String {
        text.replacingOccurrences(of: "[0-9a-f]{16}", with: "<id>", options: .regularExpression)
    }

    @Test func theTourPrintsWhatTheReadmeSays() throws {
        let server = try TestServer()
        defer { server.stop() }
        let output = try Self.run(try Self.block("example: tour"), port: server.port)
        #expect(Self.ids(output) == Self.ids(try Self.block("output: tour")))
    }

    @Test func fourCompareAndSwapLoopsCountToForty() throws {
        let server = try TestServer()
        defer { server.stop() }
        let script = try Self.block("example: cas")
        let loops = try (0..<4).map { _ in try Self.start(script, port: server.port) }
        for (process, _) in loops {
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        #expect(try server.client().get("counter").text == "40")
    }

    @Test func theWatchLoopSeesEachChangeAndTheDelete() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let (process, out) = try Self.start(try Self.block("example: watch"), port: server.port)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        for value in ["v1", "v2"] {
            #expect(Poll.holds(within: 5) { server.server.watcherCount == 1 }, "the loop is waiting")
            #expect(try client.put("config", value).status < 300)
            #expect(Poll.holds(within: 5) { server.server.watcherCount == 0 })
        }
        #expect(Poll.holds(within: 5) { server.server.watcherCount == 1 })
        #expect(try client.delete("config").status == 204)
        #expect(Poll.holds(within: 5) { !process.isRunning }, "the loop ends when the key is deleted")
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(output == "config is now v1\nconfig is now v2\nconfig is gone (404)\n")
    }

    @Test func curlFollowsTheChangeFeed() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        // One command: exec'd, so stopping the process stops curl itself.
        let (process, out) = try Self.start("exec " + (try Self.block("example: events")), port: server.port)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        #expect(Poll.holds(within: 5) { server.server.eventStreamCount == 1 })
        let created = try client.send("POST", "/store/jobs/", body: Array("resize img-7".utf8))
        #expect(created.status == 201)
        try client.put("other/x", "not under jobs/")
        #expect(try client.deletePrefix("jobs/").status == 200)
        // The feed stays open; stop curl once the bulk delete is through.
        usleep(300_000)
        // SIGKILL: a child of the test process may inherit a mask that blocks SIGTERM.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let key = created.json?["key"] as? String ?? "?"
        #expect(text.hasPrefix(": larder change feed\n\n"))
        #expect(text.contains("event: put\ndata: {\"key\":\"\(key)\""))
        #expect(text.contains("event: delete\ndata: {\"prefix\":\"jobs/\",\"deleted\":1}"))
        #expect(!text.contains("other/x"))
    }
}

struct ExampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
