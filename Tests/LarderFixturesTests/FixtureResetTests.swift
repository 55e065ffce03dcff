import Foundation
import LarderTestSupport
import LarderWire
import LarderDiskStore
import LarderStorage
import LarderValueFile
import Testing
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// A reset over fixtures does not grow with the number of keys written,
/// and a crash during its background delete loses nothing written after it.
@Suite(.longBlockingLane, .serialized) struct FixtureResetTests {
    /// `count` small JSON fixtures under `f/`.
    static func makeFixtures(_ count: Int) throws -> String { try FixtureDirectories.numbered(count) }

    /// Writes `count` keys straight through the store (the HTTP path has its
    /// own tests; this only has to fill the disk quickly), on two threads.
    static func fill(_ store: DiskStore, _ count: Int, prefix: String) {
        let errors = S.onThreads(2) { thread in
            for i in stride(from: thread, to: count, by: 2) {
                let writer = try store.beginUpload(key: try StoreKey("\(prefix)\(i % 100)/\(i)"), contentType: "application/json",
                                                   encoding: .identity, expiresNanos: nil, condition: nil)
                try Array("{\"n\":\(i)}".utf8).withUnsafeBytes { try writer.write($0) }
                _ = try writer.finish().get()
            }
        }
        #expect(errors.isEmpty, "\(errors.prefix(3))")
    }

    /// Keys written before the reset: 20,000 in the test run (the reset's
    /// answer does not grow with them: `Benchmarks/namespaces.sh` prints
    /// the figure), `LARDER_RESET_KEYS=100000` for the size in docs/performance-history.md.
    static let keysToReset = ProcessInfo.processInfo.environment["LARDER_RESET_KEYS"].flatMap { Int($0) } ?? 20_000

    @Test func resettingManyKeysOverAThousandFixturesKeepsOnlyTheFixtures() throws {
        let fixtures = try Self.makeFixtures(1_000)
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try TestServer { $0.fixturesDirectory = fixtures }
        defer { server.stop() }
        Self.fill(server.diskStore!, Self.keysToReset, prefix: "w/")
        #expect(server.diskStore!.stats.keys == Self.keysToReset)
        let client = server.client()
        #expect(try client.get("f/0001.json").status == 200)  // the connection is open before the clock starts

        let started = DispatchTime.now().uptimeNanoseconds
        let reset = try client.deletePrefix("")
        let ms = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
        print("reset of \(Self.keysToReset) keys over 1000 fixtures: \(String(format: "%.2f", ms)) ms as the client saw it")
        #expect(reset.status == 200)
        #expect(S.json(reset)["deleted"] as? Int == Self.keysToReset)
        // How long it takes is a printed figure (and Benchmarks/namespaces.sh's), not a bound.

        let listed = try S.listAll(client)
        #expect(listed.keys.count == 1_000)
        #expect(listed.keys.allSatisfy { $0.hasPrefix("f/") })
        #expect(try client.get("w/5/105").status == 404)
        #expect(try client.get("f/0999.json").text == "{\"i\":999}")
    }

    @Test func aCrashDuringTheBackgroundDeleteLosesNothingWrittenAfterTheReset() throws {
        let fixtures = try Self.makeFixtures(50)
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let seeded = try TestServer(dataDirectory: dir) { $0.fixturesDirectory = fixtures }
            Self.fill(seeded.diskStore!, 30_000, prefix: "old/")
            seeded.stop(keepData: true)
        }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--fixtures", fixtures])
        let client = child.client()
        #expect(try client.deletePrefix("").status == 200)
        #expect(try client.put("after/reset", "kept").status == 201)
        #expect(try client.put("f/0007.json", "{\"changed\":true}").status == 204)
        // Killed while the old generation's 30,000 files are still being removed.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("gen-") }
        child.kill(SIGKILL)
        _ = child.waitForExit()
        print("generations on disk at the kill: \(leftovers.sorted())")

        let restarted = try ChildServer(dataDirectory: dir, arguments: ["--fixtures", fixtures])
        let again = restarted.client()
        #expect(try again.get("after/reset").text == "kept")
        #expect(try again.get("f/0007.json").text == "{\"changed\":true}")
        #expect(try again.get("f/0008.json").header("Larder-Source") == "fixture")
        #expect(try again.get("old/7/7").status == 404)
        let keys = try S.listAll(again).keys
        #expect(keys.count == 51)
        #expect(!keys.contains { $0.hasPrefix("old/") })
        restarted.kill(SIGTERM)
        #expect(restarted.waitForExit() == 0)
    }
}
