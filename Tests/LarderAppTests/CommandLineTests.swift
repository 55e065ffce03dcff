import Foundation
import LarderClient
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The `larder` executable's flags, environment variables and log lines.
@Suite struct CommandLineTests {
    @Test func helpDocumentsEveryFlagAndItsEnvironmentVariable() throws {
        let (status, output, _) = try StoreTestSupport.run(ChildServer.binaryPath, ["--help"])
        #expect(status == 0)
        let text = String(decoding: output, as: UTF8.self)
        for flag in ["--host", "--port", "--data-dir", "--no-fsync", "--gzip-level", "--max-value-size",
                     "--max-request-line", "--max-header-bytes", "--header-timeout", "--idle-timeout",
                     "--max-connections", "--log-level", "--cache-mb", "--ephemeral", "--allow-faults"] {
            #expect(text.contains(flag), "\(flag) is not in --help")
        }
        for variable in ["LARDER_HOST", "LARDER_PORT", "LARDER_DATA_DIR", "LARDER_NO_FSYNC", "LARDER_LOG_LEVEL",
                         "LARDER_EPHEMERAL", "LARDER_ALLOW_FAULTS"] {
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
}
