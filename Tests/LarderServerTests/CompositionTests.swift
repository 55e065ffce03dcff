import Foundation
import LarderBackends
import LarderDiskStore
import LarderRouting
import LarderS3
import LarderServer
import LarderSupport
import LarderTestSupport
import LarderTesting
import Testing

/// The composition root: what one face needs of the other is handed over
/// here, and a configuration it cannot run with is refused before the
/// store is opened.
@Suite(.asyncLane) struct CompositionTests {
    /// The disk store in `directory`, with its namespaces, as `larder` makes them.
    static func configuration(_ directory: String) -> LarderConfiguration {
        let stores = StoreChoice(disk: DiskStoreOptions(dataDirectory: directory, fsync: false)).stores()
        var configuration = LarderConfiguration(storeDescription: directory, openStore: stores.factory)
        configuration.namespaceStores = stores.namespaces
        configuration.http.port = 0
        return configuration
    }

    @Test func theS3CountersAreInTheAPIsMetricsOnlyWithTheS3Face() async throws {
        let directory = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var withS3 = Self.configuration(directory + "/a")
        withS3.s3 = S3Configuration(port: 0)
        let both = try LarderTestClient(configuration: withS3)
        defer { both.shutdown() }
        #expect(await both.execute("GET", "/metrics").text.contains("# TYPE larder_s3_requests_total counter"))
        let apiOnly = try LarderTestClient(configuration: Self.configuration(directory + "/b"))
        defer { apiOnly.shutdown() }
        let metrics = await apiOnly.execute("GET", "/metrics").text
        #expect(metrics.contains("larder_http_requests_total"))
        #expect(!metrics.contains("larder_s3_requests_total"))
    }

    @Test func anS3KeyBoundToABadNamespaceNameIsRefusedAtStart() throws {
        let directory = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = Self.configuration(directory)
        configuration.s3 = S3Configuration(port: 0, credentials: S3Credentials(keys: ["k": "secret"], namespaces: ["k": "../up"]))
        #expect(throws: ConfigurationError.self) { try LarderServer(configuration: configuration, logger: .silent()) }
    }

    @Test func aConfigurationErrorLeavesTheStoreUnopened() throws {
        let directory = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var bad = Self.configuration(directory)
        bad.token = "has a space"
        #expect(throws: ConfigurationError.self) { try LarderServer(configuration: bad, logger: .silent()) }
        // The data directory's lock was never taken: a server opens it now.
        let good = try LarderServer(configuration: Self.configuration(directory), logger: .silent())
        good.shutdown()
    }
}
