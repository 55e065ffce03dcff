import Foundation
import LarderClient
import LarderKit
import LarderTestSupport
import Testing

extension KitTests {
    /// `BundledFallback`: reads fall back to bundled JSON files only when the
    /// primary cannot be reached.
    @Suite struct LarderConformanceFallbackTests {
        struct Config: Codable, Equatable {
            var feature: Bool
            var motd: String
        }

        /// A folder with `config/app.json`, as an app bundle would carry it.
        static func bundleFolder() throws -> URL {
            let folder = URL(fileURLWithPath: TestServer.makeTempDirectory())
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("config"), withIntermediateDirectories: true)
            try Data(#"{"feature":true,"motd":"offline copy"}"#.utf8).write(to: folder.appendingPathComponent("config/app.json"))
            return folder
        }

        /// `BundledFallback` over any store (a generic, so `any Larder` can be its primary).
        static func fallback(_ primary: some Larder, directory: URL) -> any Larder {
            BundledFallback(primary: primary, directory: directory)
        }

        @Test func unreachableServerFallsBackToTheBundledFile() async throws {
            let folder = try Self.bundleFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            // Bound and never listened on: refused, and no other test's server
            // can take the port meanwhile (a stopped server's port could be,
            // and was once, in a loaded run).
            let closed = try SilentListener(listening: false)
            defer { withExtendedLifetime(closed) {} }
            let client = LarderClient(baseURL: URL(string: "http://127.0.0.1:\(closed.port)")!, timeout: 10)
            let larder = BundledFallback(primary: client, directory: folder)

            // The client alone cannot reach it.
            #expect(await thrownCase { _ = try await client.fetch("config/app") } == "unreachable")
            let stored = try await larder.fetch("config/app")
            #expect(stored.info.source == .fixture)
            #expect(stored.contentType == "application/json")
            #expect(try await larder.fetch(Config.self, at: "config/app") == Config(feature: true, motd: "offline copy"))
            #expect(try await larder.info("config/app").size == stored.data.count)
            // No bundled file: the primary's error stands.
            #expect(await thrownCase { _ = try await larder.fetch("config/missing") } == "unreachable")
            // Writes go to the primary only.
            #expect(await thrownCase { try await larder.save(Data("x".utf8), at: "config/app") } == "unreachable")
        }

        /// A connection reset before the answer (a `drop` fault: a crashed
        /// server, a flaky link) is offline too, for a read.
        @Test func aReadWhoseConnectionIsResetFallsBackToTheBundledFile() async throws {
            let folder = try Self.bundleFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let server = try TestServer { $0.allowFaults = true }
            defer { server.stop() }
            let rules = #"[{"prefix":"config/","methods":["GET","HEAD"],"drop":"before"}]"#
            #expect(try server.client().send("PUT", "/faults", body: Array(rules.utf8)).status == 200)
            let client = LarderClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, timeout: 10)
            let larder = BundledFallback(primary: client, directory: folder)
            #expect(await thrownCase { _ = try await client.fetch("config/app") } == "connectionLost")
            #expect(try await larder.fetch(Config.self, at: "config/app") == Config(feature: true, motd: "offline copy"))
        }

        @Test(arguments: LarderKind.allCases)
        func aReachablePrimaryWinsOverTheBundle(kind: LarderKind) async throws {
            let folder = try Self.bundleFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            try await withKitStore(kind) { store in
                let larder = Self.fallback(store.larder, directory: folder)
                try await larder.save(Config(feature: false, motd: "live"), at: "config/app")
                #expect(try await larder.fetch(Config.self, at: "config/app") == Config(feature: false, motd: "live"))
                #expect(try await larder.fetch("config/app").info.source == .store)
                // Reachable and absent is notFound, not the bundled copy.
                try await larder.delete("config/app")
                #expect(await thrownCase { _ = try await larder.fetch("config/app") } == "notFound")
            }
        }
    }
}
