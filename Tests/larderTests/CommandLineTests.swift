import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The `larder` executable's flags, environment variables and log lines.
@Suite(.blockingLane) struct CommandLineTests {
    @Test func helpDocumentsEveryFlagAndItsEnvironmentVariable() throws {
        let (status, output, _) = try StoreTestSupport.run(ChildServer.binaryPath, ["--help"])
        #expect(status == 0)
        let text = String(decoding: output, as: UTF8.self)
        for flag in ["--host", "--port", "--data-dir", "--no-fsync", "--gzip-level", "--max-value-size",
                     "--max-request-line", "--max-header-bytes", "--header-timeout", "--idle-timeout",
                     "--max-connections", "--log-level", "--cache-mb", "--ephemeral", "--allow-faults",
                     "--token", "--token-file", "--cors-origin", "--fixtures"] {
            #expect(text.contains(flag), "\(flag) is not in --help")
        }
        for variable in ["LARDER_HOST", "LARDER_PORT", "LARDER_DATA_DIR", "LARDER_NO_FSYNC", "LARDER_LOG_LEVEL",
                         "LARDER_EPHEMERAL", "LARDER_ALLOW_FAULTS", "LARDER_TOKEN", "LARDER_TOKEN_FILE",
                         "LARDER_CORS_ORIGIN", "LARDER_FIXTURES"] {
            #expect(text.contains(variable), "\(variable) is not in --help")
        }
    }

    @Test func environmentSetsALimitAndTheFlagWins() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fromEnvironment = try ChildServer(dataDirectory: dir, environment: ["LARDER_MAX_VALUE_SIZE": "16"])
        let client = fromEnvironment.client()
        #expect(try client.put("small", Array(repeating: 1, count: 16)).status == 201)
        #expect(try client.put("large", Array(repeating: 1, count: 17)).status == 413)
        fromEnvironment.kill(SIGTERM)
        #expect(fromEnvironment.waitForExit() == 0)

        let flagWins = try ChildServer(dataDirectory: dir, arguments: ["--max-value-size", "32"],
                                       environment: ["LARDER_MAX_VALUE_SIZE": "16"])
        #expect(try flagWins.client().put("large", Array(repeating: 1, count: 17)).status == 201)
        // A chunked body has no size up front: the store's own limit refuses it,
        // so the flag must have reached the store's options too.
        let chunked = try HTTPClientConnection(port: flagWins.port, timeout: 10)
        let body = String(repeating: "x", count: 40)
        try chunked.send("PUT /store/chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                         + "28\r\n\(body)\r\n0\r\n\r\n")
        let refused = try chunked.readResponse()
        #expect(refused.status == 413, "\(refused.status) \(refused.text)")
        #expect(try flagWins.client().get("chunked").status == 404)
    }

    @Test func invalidFlagValuesAreRefusedWithAMessage() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--gzip-level", "0"], waitUntilListening: false)
        #expect(child.waitForExit() != 0)
        #expect(child.log.contains("--gzip-level must be from 1 to 9"), "\(child.log)")
    }

    @Test func oneLogLinePerRequestAtInfo() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--log-level", "info"])
        let client = child.client()
        try client.put("logged/key", "v")
        _ = try client.get("logged/key")
        _ = try client.get("logged/missing")
        child.kill(SIGTERM)
        #expect(child.waitForExit() == 0)
        let lines = child.log.split(separator: "\n")
        #expect(lines.contains { $0.contains("info") && $0.contains("PUT /store/logged/key 201") })
        #expect(lines.contains { $0.contains("GET /store/logged/key 200 1B") })
        #expect(lines.contains { $0.contains("GET /store/logged/missing 404") })
    }

    @Test func portZeroPicksAFreePortAndTheLogNamesIt() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--log-level", "error"])
        #expect(child.port > 0)
        #expect(try child.client().send("GET", "/healthz").status == 200)
    }

    /// `--token-file` (its trailing newline dropped), repeated `--cors-origin`,
    /// their environment variables, the flag winning, refusals at start, and
    /// an access log that never prints the token.
    @Test func tokenAndCORSFlags() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let tokenFile = dir + "/token"
        try Data("file-token\r\n".utf8).write(to: URL(fileURLWithPath: tokenFile))
        let child = try ChildServer(dataDirectory: dir + "/data",
                                    arguments: ["--token-file", tokenFile, "--cors-origin", "http://a.example",
                                                "--cors-origin", "http://b.example:8000", "--log-level", "info"])
        let client = child.client()
        #expect(try client.send("GET", "/store/").status == 401)
        #expect(try client.send("GET", "/healthz").status == 200)
        #expect(try client.send("GET", "/store/?access_token=file-token").status == 401)
        client.token = "file-token"
        #expect(try client.send("GET", "/store/").status == 200)
        let preflight = try client.send("OPTIONS", "/store/k", headers: [("Origin", "http://b.example:8000"),
                                                                         ("Access-Control-Request-Method", "PUT")])
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Origin") == "http://b.example:8000")
        #expect(try client.send("OPTIONS", "/store/k", headers: [("Origin", "http://c.example"),
                                                                 ("Access-Control-Request-Method", "PUT")]).status == 403)
        let feed = try SSEClient(port: child.port, target: "/events?access_token=file-token", headers: [("Origin", "http://a.example")])
        #expect(try feed.readHead() == 200)
        #expect(feed.header("Access-Control-Allow-Origin") == "http://a.example")
        feed.close()
        child.kill(SIGTERM)
        #expect(child.waitForExit() == 0)
        #expect(child.log.contains("GET /store/?access_token=REDACTED 401"), "\(child.log)")
        #expect(!child.log.contains("file-token"), "the token is in the log")

        // The environment, with a comma-separated origin list; the flag wins over it.
        let env = ["LARDER_TOKEN": "env-token", "LARDER_CORS_ORIGIN": "http://a.example, http://b.example"]
        let fromEnvironment = try ChildServer(dataDirectory: dir + "/data", environment: env)
        let envClient = fromEnvironment.client()
        envClient.token = "env-token"
        #expect(try envClient.send("GET", "/store/").status == 200)
        #expect(try envClient.send("OPTIONS", "/store/", headers: [("Origin", "http://b.example"),
                                                                   ("Access-Control-Request-Method", "GET")]).status == 204)
        fromEnvironment.kill(SIGTERM)
        #expect(fromEnvironment.waitForExit() == 0)
        let flagWins = try ChildServer(dataDirectory: dir + "/data", arguments: ["--token", "flag-token"], environment: env)
        let flagClient = flagWins.client()
        flagClient.token = "env-token"
        #expect(try flagClient.send("GET", "/store/").status == 401)
        flagClient.token = "flag-token"
        #expect(try flagClient.send("GET", "/store/").status == 200)
        flagWins.kill(SIGTERM)
        #expect(flagWins.waitForExit() == 0)

        try Data("\n".utf8).write(to: URL(fileURLWithPath: dir + "/empty"))
        for (arguments, message) in [(["--token", "a", "--token-file", tokenFile], "not both"),
                                     (["--token-file", dir + "/empty"], "is empty"),
                                     (["--token-file", dir + "/missing"], "cannot read the token file"),
                                     (["--token", "two words"], "visible ASCII"),
                                     (["--cors-origin", "app.example"], "is not an origin")] {
            let refused = try ChildServer(dataDirectory: dir + "/data", arguments: arguments, waitUntilListening: false)
            #expect(refused.waitForExit() != 0, "\(arguments) started")
            #expect(refused.log.contains(message), "\(arguments): \(refused.log)")
        }
    }

    @Test func nonsenseTimeoutsAreRefusedAtStart() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--idle-timeout=-1"], waitUntilListening: false)
        #expect(child.waitForExit() != 0)
        #expect(child.log.contains("--idle-timeout must be more than 0"), "\(child.log)")
    }

    @Test func hugeHeadLimitsAreRefusedAtStart() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--max-header-bytes", "9223372036854775000"],
                                    waitUntilListening: false)
        #expect(child.waitForExit() != 0)
        #expect(child.log.contains("--max-header-bytes must be from 1 to"), "\(child.log)")
    }
}
