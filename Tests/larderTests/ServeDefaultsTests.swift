import Foundation
import LarderApp
import LarderRouting
import LarderServer
import LarderHTTP
import LarderModel
import LarderPostgres
import LarderDiskStore
import LarderStorage
import LarderValueFile
import Testing
import LarderTestSupport

/// Every option's default is written once, on the configuration types:
/// `larder serve --help` shows those values, and the types that share a
/// setting agree on it.
@Suite(.blockingLane) struct ServeDefaultsTests {
    /// The `(default: …)` of each flag in `larder serve --help`.
    static func helpDefaults() throws -> [String: String] {
        let (status, output, _) = try StoreTestSupport.run(ChildServer.binaryPath, ["serve", "--help"])
        #expect(status == 0)
        // Each option starts a line two spaces in; the help wraps its text
        // onto lines indented further.
        var chunks: [String] = []
        for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
            if line.hasPrefix("  -") { chunks.append(String(line)) } else if !chunks.isEmpty { chunks[chunks.count - 1] += " " + line }
        }
        var defaults: [String: String] = [:]
        for chunk in chunks {
            let text = chunk.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            guard let flag = text.firstMatch(of: /--[a-z-]+/), let value = text.firstMatch(of: /\(default: ([^)]+)\)/) else { continue }
            defaults[String(flag.0)] = String(value.1)
        }
        return defaults
    }

    @Test func theHelpShowsTheConfigurationTypesDefaults() throws {
        let http = HTTPServerConfiguration()
        let expected: [String: String] = [
            "--host": http.host,
            "--port": "\(http.port)",
            "--data-dir": DiskStoreOptions.defaultDataDirectory,
            "--pg-pool": "\(PostgresStoreOptions.defaultPoolSize)",
            "--gzip-level": "\(DiskStoreOptions.defaultGzipLevel)",
            "--max-value-size": "\(http.maxBodyBytes)",
            "--max-request-line": "\(http.maxRequestLineBytes)",
            "--max-header-bytes": "\(http.maxHeaderBytes)",
            "--header-timeout": "\(Int(http.headerTimeout))",
            "--idle-timeout": "\(Int(http.idleTimeout))",
            "--max-connections": "\(http.maxConnections)",
            "--log-level": Self.server.logLevel.rawValue,
            "--cache-mb": "\(Self.disk.cacheBytes >> 20)",
            "--event-history": "\(Self.server.eventHistory)",
            "--event-buffer-kb": "\(Self.server.eventBufferBytes >> 10)",
        ]
        let shown = try Self.helpDefaults()
        for (flag, value) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(shown[flag] == value, "\(flag): the help says \(shown[flag] ?? "nothing"), the configuration \(value)")
        }
    }

    /// The server's configuration as a caller makes it, on an unopened store.
    static var server: LarderConfiguration {
        LarderConfiguration(storeDescription: "unused") { _, _ in throw CancellationError() }
    }
    /// The disk store's options as `larder serve` starts from them.
    static var disk: DiskStoreOptions { DiskStoreOptions(dataDirectory: DiskStoreOptions.defaultDataDirectory) }

    /// A setting more than one type applies has one default (ServerDefaults).
    @Test func theTypesThatShareASettingAgree() throws {
        let server = Self.server, disk = Self.disk
        let postgres = try PostgresStoreOptions(url: "postgres://localhost/larder")
        #expect(server.http.maxBodyBytes == ServerDefaults.maxValueSize)
        #expect(disk.maxValueSize == ServerDefaults.maxValueSize)
        #expect(postgres.maxValueSize == ServerDefaults.maxValueSize)
        #expect(server.eventHistory == ServerDefaults.changeHistory)
        #expect(postgres.changeHistory == ServerDefaults.changeHistory)
        #expect(postgres.gzipLevel == disk.gzipLevel)
        #expect(postgres.poolSize == PostgresStoreOptions.defaultPoolSize)
        #expect(disk.dataDirectory == DiskStoreOptions.defaultDataDirectory)
    }
}
