import Foundation
import LarderApp
import LarderDiskStore
import LarderFixtures
import LarderStorage
import LarderValueFile
import Testing
import LarderTestSupport

/// `/metrics` learns the fixture totals from the store's own answer
/// (`ValueStore.fixtureStats`), not from which class the store is: a store
/// that wraps the fixture layer (as an app adding its own layer would)
/// still has its fixtures counted.
@Suite(.blockingLane) struct FixtureMetricsTests {
    @Test func fixturesUnderAWrappedStoreAreCounted() throws {
        let fixtures = try FixtureTests.makeFixtures()
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try TestServer { setup in
            let options = setup.store
            setup.openStore = { changes, logger in
                PassThroughStore(try LayeredStore(options: options, fixturesDirectory: fixtures, logger: logger, changes: changes))
            }
        }
        defer { server.stop() }
        let client = server.client()
        #expect(try client.get("users/1.json").header("Larder-Source") == "fixture")
        let metrics = try client.send("GET", "/metrics").text
        #expect(metrics.contains("\nlarder_fixture_keys 5\n"), "\(metrics)")
    }
}
