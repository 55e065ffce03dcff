import Foundation
import LarderTestSupport
import LarderWire
import Testing

/// docker-compose.yml against the Compose Specification's JSON schema
/// (docker/compose-spec.json), through docker/check_compose.py: the one
/// check of the file that no engine here makes. Compose v1 runs the file for
/// real in Tests/containers (`.ci/containers`); Compose v2 reads the file by
/// this specification, and no v2 is installed on these machines.
@Suite(.blockingLane) struct ComposeFileTests {
    static let modules = [(module: "yaml", package: "pyyaml"), (module: "jsonschema", package: "jsonschema")]

    /// docker/check_compose.py: the interpolated file as JSON, or its problems.
    static func check(file: String = Repository.path("docker-compose.yml"),
                      environment: [String: String] = [:]) throws -> (status: Int32, document: [String: Any], problems: String) {
        try PythonRunner.require(modules)
        let result = try PythonRunner.run([Repository.path("docker/check_compose.py"), "--file", file], environment: environment)
        let document = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:]
        return (result.status, document, result.stderr)
    }

    @Test func theFileIsValidUnderTheComposeSpecification() throws {
        let (status, document, problems) = try Self.check()
        #expect(status == 0, "\(problems)")
        let services = document["services"] as? [String: Any] ?? [:]
        #expect(Set(services.keys) == ["larder", "example", "postgres", "larder-a", "larder-b"])
        // Compose v1 (Debian's docker-compose 1.29) refuses a top-level `name:`.
        #expect(document["name"] == nil)
    }

    /// CI has ../shared beside the clone: the copy must not go stale.
    @Test func theSchemaIsTheSharedOne() throws {
        let shared = Repository.root + "/../shared/compose-spec.json"
        guard FileManager.default.fileExists(atPath: shared) else { return }
        let copy = FileManager.default.contents(atPath: Repository.path("docker/compose-spec.json"))
        #expect(copy == FileManager.default.contents(atPath: shared), "docker/compose-spec.json differs from ../shared/compose-spec.json")
    }

    /// The check is only worth something if it fails.
    @Test(arguments: [
        ("condition: service_healthy", "condition: service_happy", "is not valid under any of the given schemas"),
        ("\nservices:", "\nservice:", "does not match any of the regexes"),
        ("restart: \"no\"", "restart: [\"no\"]", "is not of type 'string'"),
    ])
    func aFileOutsideTheSpecificationIsCaught(original: String, replacement: String, problem: String) throws {
        let compose = try String(contentsOfFile: Repository.path("docker-compose.yml"), encoding: .utf8)
        #expect(compose.contains(original), "docker-compose.yml no longer says \(original)")
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let broken = dir + "/docker-compose.yml"
        try compose.replacingOccurrences(of: original, with: replacement).write(toFile: broken, atomically: true, encoding: .utf8)
        let (status, _, problems) = try Self.check(file: broken)
        #expect(status == 1)
        #expect(problems.contains(problem), "\(problems)")
    }
}
