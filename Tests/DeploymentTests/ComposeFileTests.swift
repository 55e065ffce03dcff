import Foundation
import LarderTestSupport
import LarderWire
import Testing

/// docker-compose.yml, checked without a Docker engine: the Compose
/// Specification's JSON schema (docker/compose-spec.json) and the checks of
/// docker/check_compose.py, then the `example` service's script run by
/// hand against a real `larder` with the environment the file gives both.
@Suite struct ComposeFileTests {
    static let modules = [(module: "yaml", package: "pyyaml"), (module: "jsonschema", package: "jsonschema")]

    /// docker/check_compose.py: the interpolated file as JSON, or its problems.
    static func check(file: String = Repository.path("docker-compose.yml"),
                      environment: [String: String] = [:]) throws -> (status: Int32, document: [String: Any], problems: String) {
        try PythonRunner.require(modules)
        // The test process's own LARDER_TOKEN must not decide what the file says.
        var env = environment
        if env["LARDER_TOKEN"] == nil { env["LARDER_TOKEN"] = "" }
        let result = try PythonRunner.run([Repository.path("docker/check_compose.py"), "--file", file], environment: env)
        let document = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:]
        return (result.status, document, result.stderr)
    }

    static func service(_ document: [String: Any], _ name: String) -> [String: Any] {
        (document["services"] as? [String: Any])?[name] as? [String: Any] ?? [:]
    }

    static func environment(_ service: [String: Any]) -> [String: String] {
        (service["environment"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
    }

    @Test func theFileIsValidCompose() throws {
        let (status, document, problems) = try Self.check()
        #expect(status == 0, "\(problems)")
        let larder = Self.service(document, "larder")
        let example = Self.service(document, "example")
        #expect(larder["build"] as? String == ".")
        #expect((larder["volumes"] as? [String] ?? []).contains("./fixtures:/fixtures:ro"))
        #expect(Self.environment(larder)["LARDER_FIXTURES"] == "/fixtures")
        let dependsOn = example["depends_on"] as? [String: [String: Any]]
        #expect(dependsOn?["larder"]?["condition"] as? String == "service_healthy")
        // The services without a profile stay as they were: `docker compose up` starts only them.
        #expect(larder["profiles"] == nil && example["profiles"] == nil)
    }

    /// `docker compose --profile postgres up`: one PostgreSQL and two Larders
    /// on it, built alike, each on its own loopback port, each waiting for the
    /// database's health check, the password from the environment in both the
    /// database and the URLs.
    @Test func thePostgresProfileRunsTwoLardersOnOneDatabase() throws {
        let unset = try Self.check()
        #expect(unset.status == 0, "\(unset.problems)")
        let postgres = Self.service(unset.document, "postgres")
        #expect(postgres["profiles"] as? [String] == ["postgres"])
        #expect(postgres["image"] as? String == "postgres:15-bookworm")
        #expect((postgres["volumes"] as? [String] ?? []).contains("larder-pg:/var/lib/postgresql/data"))
        #expect(((postgres["healthcheck"] as? [String: Any])?["test"] as? [String] ?? []).contains("pg_isready"))
        #expect(Self.environment(postgres)["POSTGRES_PASSWORD"] == "larder-dev")
        let larders = ["larder-a", "larder-b"].map { Self.service(unset.document, $0) }
        #expect(larders.allSatisfy { $0["profiles"] as? [String] == ["postgres"] && $0["build"] as? String == "." && $0["image"] as? String == "larder:latest" })
        #expect(larders.map { $0["ports"] as? [String] ?? [] } == [["127.0.0.1:8081:8080"], ["127.0.0.1:8082:8080"]])
        for larder in larders {
            #expect(Self.environment(larder)["LARDER_STORE"] == "postgres://larder:larder-dev@postgres:5432/larder")
            let dependsOn = larder["depends_on"] as? [String: [String: Any]]
            #expect(dependsOn?["postgres"]?["condition"] as? String == "service_healthy")
            #expect(larder["healthcheck"] as? NSDictionary == Self.service(unset.document, "larder")["healthcheck"] as? NSDictionary)
        }
        let set = try Self.check(environment: ["POSTGRES_PASSWORD": "pg-s3cret"])
        #expect(set.status == 0, "\(set.problems)")
        #expect(Self.environment(Self.service(set.document, "postgres"))["POSTGRES_PASSWORD"] == "pg-s3cret")
        #expect(Self.environment(Self.service(set.document, "larder-b"))["LARDER_STORE"] == "postgres://larder:pg-s3cret@postgres:5432/larder")
    }

    @Test func theTokenComesFromTheEnvironmentAndBothServicesShareIt() throws {
        let unset = try Self.check()
        #expect(Self.environment(Self.service(unset.document, "larder"))["LARDER_TOKEN"] == "dev-token")
        let set = try Self.check(environment: ["LARDER_TOKEN": "s3cret"])
        #expect(set.status == 0, "\(set.problems)")
        #expect(Self.environment(Self.service(set.document, "larder"))["LARDER_TOKEN"] == "s3cret")
        #expect(Self.environment(Self.service(set.document, "example"))["LARDER_TOKEN"] == "s3cret")
    }

    /// CI has ../shared beside the clone: the copy must not go stale.
    @Test func theSchemaIsTheSharedOne() throws {
        let shared = Repository.root + "/../shared/compose-spec.json"
        guard FileManager.default.fileExists(atPath: shared) else { return }
        let copy = FileManager.default.contents(atPath: Repository.path("docker/compose-spec.json"))
        #expect(copy == FileManager.default.contents(atPath: shared), "docker/compose-spec.json differs from ../shared/compose-spec.json")
    }

    /// The checker is only worth something if it fails.
    @Test(arguments: [
        ("condition: service_healthy", "condition: service_happy", "is not valid under any of the given schemas"),
        ("\nservices:", "\nservice:", "does not match any of the regexes"),
        ("./fixtures:/fixtures:ro\n    environment:\n      # Set", "./fixturez:/fixtures:ro\n    environment:\n      # Set", "the bind-mount source ./fixturez does not exist"),
        ("\"--timeout\", \"4\"]", "\"--timeout\", \"9\"]", "is not the image's HEALTHCHECK"),
        ("- larder-data:/data", "- other-data:/data", "the named volume other-data is not declared"),
        ("127.0.0.1:8080:8080", "127.0.0.1:8080:80", "publishes no container port 8080"),
        ("image: larder:latest", "image: larder:latest\n    pid_mode: [host]", "pid_mode"),
        // The `postgres` profile.
        ("    depends_on:\n      postgres:\n        condition: service_healthy\n", "", "does not wait for postgres with condition: service_healthy"),
        ("\"127.0.0.1:8082:8080\"", "\"127.0.0.1:8081:8080\"", "host port 127.0.0.1:8081 is also published by larder-a (profile postgres)"),
        ("\"127.0.0.1:8081:8080\"", "\"127.0.0.1:8080:8080\"", "host port 127.0.0.1:8080 is also published by larder (profile postgres)"),
        ("@postgres:5432/larder", "@db:5432/larder", "names the host db, which is no service here"),
        ("POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-larder-dev}", "POSTGRES_PASSWORD: other", "the password in LARDER_STORE is not the one postgres's"),
        ("  larder-b:\n    profiles: [\"postgres\"]\n", "  larder-b:\n", "postgres runs only with the profile(s) ['postgres'], larder-b always"),
        ("\"CMD\", \"pg_isready\"", "\"CMD\", \"true\"", "no pg_isready health check"),
        ("- larder-pg:/var/lib/postgresql/data", "- larder-pg:/srv", "nothing is mounted at /var/lib/postgresql/data"),
        ("  larder-b:\n    profiles: [\"postgres\"]\n    build: .\n    image: larder:latest", "  larder-b:\n    profiles: [\"postgres\"]\n    build: .\n    image: larder:b",
         "larder-a, larder-b are not built the same way"),
    ])
    func aBrokenFileIsCaught(original: String, replacement: String, problem: String) throws {
        let compose = try String(contentsOfFile: Repository.path("docker-compose.yml"), encoding: .utf8)
        #expect(compose.contains(original), "docker-compose.yml no longer says \(original)")
        // In a copy of what the file refers to, so that ./fixtures and the build context resolve.
        let root = try DockerfileTests.copyOfTheBuildContext()
        defer { try? FileManager.default.removeItem(atPath: root) }
        for name in ["fixtures", "examples"] {
            try FileManager.default.copyItem(atPath: Repository.path(name), toPath: root + "/" + name)
        }
        let broken = root + "/docker-compose.yml"
        try compose.replacingOccurrences(of: original, with: replacement).write(toFile: broken, atomically: true, encoding: .utf8)
        let (status, _, problems) = try Self.check(file: broken)
        #expect(status == 1)
        #expect(problems.contains(problem), "\(problems)")
    }

    /// The `example` service's script, run here with /bin/sh against the real
    /// binary started with the `larder` service's environment (the bind mounts
    /// mapped back to the repository, `larder:8080` to the server's port).
    /// Fixtures and the token are required as soon as the binary has them
    /// (`--fixtures`, `--token` in its help); before that the script says it
    /// skipped those checks.
    @Test func theExampleServicesScriptPassesAgainstARealServer() throws {
        let (status, document, problems) = try Self.check(environment: ["LARDER_TOKEN": "compose-test-token"])
        #expect(status == 0, "\(problems)")
        var serverEnv = Self.environment(Self.service(document, "larder"))
        var clientEnv = Self.environment(Self.service(document, "example"))
        serverEnv["LARDER_FIXTURES"] = Repository.path("fixtures")
        clientEnv["FIXTURES_DIR"] = Repository.path("fixtures")

        let help = String(decoding: try StoreTestSupport.run(ChildServer.binaryPath, ["--help"]).output, as: UTF8.self)
        let hasFixtures = help.contains("--fixtures"), hasToken = help.contains("--token")
        clientEnv["SMOKE_FIXTURES"] = hasFixtures ? "require" : "auto"
        clientEnv["SMOKE_TOKEN"] = hasToken ? "require" : "auto"

        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--log-level", "error"], environment: serverEnv)
        #expect(clientEnv["LARDER_URL"] == "http://larder:8080")
        clientEnv["LARDER_URL"] = "http://127.0.0.1:\(child.port)"

        let assignments = clientEnv.map { "\($0.key)=\($0.value)" }.sorted()
        let (code, output, error) = try StoreTestSupport.run("/usr/bin/env", ["-i", "PATH=/usr/local/bin:/usr/bin:/bin"] + assignments
                                                             + ["/bin/sh", Repository.path("examples/compose-smoke.sh")])
        let text = String(decoding: output, as: UTF8.self)
        print(text.split(separator: "\n").map { "compose-smoke.sh: " + $0 }.joined(separator: "\n"))
        #expect(code == 0, "\(text)\(error)\n\(child.log)")
        #expect(text.contains("ok: PUT /store/compose-smoke/"))
        #expect(text.contains("ok: GET /store/compose-smoke/"))
        #expect(text.contains(hasFixtures ? "ok: GET /store/users/ada.json" : "skipped: the server serves no fixtures"))
        #expect(text.contains(hasToken ? "ok: GET without the token: 401" : "skipped: the server takes requests without a token"))
        // The script cleans up after itself.
        let client = child.client()
        client.token = serverEnv["LARDER_TOKEN"]
        let listing = try client.send("GET", "/store/compose-smoke/")
        #expect((listing.json?["keys"] as? [Any])?.isEmpty == true, "\(listing.text)")
    }
}
