import Foundation
import LarderTestSupport
import LarderWire
import Testing

/// The Dockerfile's cheap checks (no Docker engine here, and no release
/// build: `bash docker/check-offline.sh` does the expensive ones — the
/// release static build, ldd, the runtime stage in a minbase bookworm tree).
@Suite struct DockerfileTests {
    /// docker/check_dockerfile.py on `root`: its JSON summary, or its problems.
    static func check(root: String = Repository.root) throws -> (status: Int32, summary: [String: Any], problems: String) {
        let result = try PythonRunner.run([Repository.path("docker/check_dockerfile.py"), "--root", root])
        let summary = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:]
        return (result.status, summary, result.stderr)
    }

    static func runtimeStage(_ summary: [String: Any]) -> [String: Any] {
        (summary["stages"] as? [[String: Any]])?.last ?? [:]
    }

    @Test func theDockerfilePassesItsStaticChecks() throws {
        let (status, summary, problems) = try Self.check()
        #expect(status == 0, "\(problems)")
        let images = (summary["stages"] as? [[String: Any]] ?? []).compactMap { $0["image"] as? String }
        #expect(images.count == 2 && images[0].hasPrefix("swift:6.") && images[1] == "debian:bookworm-slim", "\(images)")
    }

    /// The checker is only worth something if it fails: each broken copy is caught.
    @Test(arguments: [
        ("USER 10001:10001", "USER root", "not a non-root user"),
        ("ARG SWIFT_IMAGE=swift:6.3-bookworm", "ARG SWIFT_IMAGE=swift:5.10-jammy", "not an official swift:<6.x>-bookworm image"),
        ("debian:bookworm-slim", "debian:bullseye-slim", "is not debian:bookworm-slim"),
        ("VOLUME /data", "VOLUME /var/data", "is not a VOLUME"),
        ("COPY --from=build", "COPY --from=builder", "names no earlier stage"),
        ("EXPOSE 8080", "EXPOSE 80", "does not include LARDER_PORT"),
        // The viewer is the one built into the binary: from the build stage's Public/, not a runtime copy.
        ("COPY Public ./Public", "# COPY Public ./Public", "Public/ is not copied in"),
        ("    LARDER_DATA_DIR=/data\n", "    LARDER_DATA_DIR=/data \\\n    LARDER_PUBLIC_DIR=/srv/Public\n", "LARDER_PUBLIC_DIR=/srv/Public is set"),
        ("COPY --from=build /out/larder /usr/local/bin/larder", "COPY --from=build /out/larder /usr/local/bin/larder\nCOPY Public /srv/Public",
         "Public/ is copied in; the viewer is built into the binary"),
        ("CMD [\"larder\", \"healthcheck\"", "CMD [\"curl\", \"healthcheck\"", "not the server's binary"),
        ("zlib1g libpq5 libstdc++6", "libpq5 libstdc++6", "zlib1g is not installed"),
        // The postgres store links libpq: its headers to build, libpq.so.5 to run.
        ("zlib1g-dev libpq-dev", "zlib1g-dev", "libpq-dev is not installed"),
        ("zlib1g libpq5", "zlib1g", "libpq5 is not installed"),
        ("--static-swift-stdlib --product", "--product", "--static-swift-stdlib"),
        ("FROM ${RUNTIME_IMAGE}", "FORM ${RUNTIME_IMAGE}", "unknown instruction FORM"),
        // SwiftPM checks every target's folder: a build without Tests/ fails (found by check-offline.sh).
        ("COPY Tests ./Tests", "# COPY Tests ./Tests", "the target folder Tests/LarderAppTests (Package.swift) is not copied in"),
    ])
    func aBrokenDockerfileIsCaught(original: String, replacement: String, problem: String) throws {
        let root = try Self.copyOfTheBuildContext()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dockerfile = try String(contentsOfFile: Repository.path("Dockerfile"), encoding: .utf8)
        #expect(dockerfile.contains(original), "the Dockerfile no longer says \(original)")
        try dockerfile.replacingOccurrences(of: original, with: replacement)
            .write(toFile: root + "/Dockerfile", atomically: true, encoding: .utf8)
        let (status, _, problems) = try Self.check(root: root)
        #expect(status == 1)
        #expect(problems.contains(problem), "\(problems)")
    }

    @Test func aDockerignoreThatDropsTheSourcesIsCaught() throws {
        let root = try Self.copyOfTheBuildContext()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let ignore = try String(contentsOfFile: Repository.path(".dockerignore"), encoding: .utf8)
        try (ignore + "\nSources/larder\n").write(toFile: root + "/.dockerignore", atomically: true, encoding: .utf8)
        let (status, _, problems) = try Self.check(root: root)
        #expect(status == 1)
        #expect(problems.contains(".dockerignore leaves out"), "\(problems)")
    }

    /// The HEALTHCHECK's command, run as the image would (its ENV, with the
    /// port of a real server), passes; with the server gone it fails.
    @Test func theHealthcheckCommandPassesAgainstARealServer() throws {
        let (_, summary, _) = try Self.check()
        let health = (summary["healthcheck"] as? [String: Any])?["exec"] as? [String] ?? []
        #expect(health.first == "larder", "\(health)")
        let server = try TestServer()
        var env = Self.runtimeStage(summary)["env"] as? [String: String] ?? [:]
        #expect(env["LARDER_HOST"] == "0.0.0.0")
        env["LARDER_PORT"] = "\(server.port)"
        let command = [ChildServer.binaryPath] + health.dropFirst()
        let run = { try StoreTestSupport.run("/usr/bin/env", ["-i"] + env.map { "\($0)=\($1)" } + command) }
        let healthy = try run()
        #expect(healthy.status == 0, "\(healthy.error)")
        server.stop()
        #expect(try run().status == 1)
    }

    /// The image's ENTRYPOINT + CMD with its ENV (LARDER_DATA_DIR moved under
    /// a temp folder; loopback instead of 0.0.0.0): it stores values there
    /// and serves the viewer built into the binary, byte for byte Public/,
    /// with no folder of files beside it.
    @Test func theEntrypointServesTheDataFolderAndTheBuiltInViewer() throws {
        let (_, summary, _) = try Self.check()
        let stage = Self.runtimeStage(summary)
        let env = stage["env"] as? [String: String] ?? [:]
        #expect(env["LARDER_PUBLIC_DIR"] == nil)
        let command = (summary["entrypoint"] as? [String] ?? []) + (summary["cmd"] as? [String] ?? [])
        #expect(command == ["larder", "serve"])
        let image = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: image) }
        let dataDir = image + (env["LARDER_DATA_DIR"] ?? "/missing")
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        var moved = env.filter { $0.key != "LARDER_HOST" }
        moved["LARDER_DATA_DIR"] = dataDir
        // ChildServer adds --port 0 and --data-dir (the same folder); the flags win over the ENV.
        let child = try ChildServer(dataDirectory: dataDir, arguments: ["--host", "127.0.0.1", "--log-level", "error"],
                                    environment: moved)
        let client = child.client()
        let index = try client.send("GET", "/viewer/")
        #expect(index.status == 200)
        let shipped = try #require(FileManager.default.contents(atPath: Repository.path("Public/index.html")))
        #expect(index.body == Array(shipped), "the built-in viewer is Public/ as built")
        #expect(try client.put("docker/value", "v").status == 201)
        #expect(FileManager.default.fileExists(atPath: dataDir + "/larder.lock"))
    }

    /// The build context as docker would see it: the Dockerfile, .dockerignore
    /// and what the COPY lines name.
    static func copyOfTheBuildContext() throws -> String {
        let root = TestServer.makeTempDirectory()
        for name in ["Dockerfile", ".dockerignore", "Package.swift", "Package.resolved", "Sources", "Plugins", "Tests", "Public"] {
            try FileManager.default.copyItem(atPath: Repository.path(name), toPath: root + "/" + name)
        }
        return root
    }
}
