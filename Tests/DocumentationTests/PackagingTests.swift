import Foundation
import LarderModel
import LarderTestSupport
import Testing

/// The packages carry one version (docs/install.md): `larder --version`,
/// the wheel's (pytest_larder's `__version__`, which hatchling reads), the
/// npm package's and the OpenAPI document's. build-wheel.sh and
/// build-package.sh also refuse a binary whose version differs; this finds
/// the drift in `swift test`, before a package is built.
@Suite(.blockingLane) struct PackagingTests {
    @Test func theBinaryPrintsItsVersion() throws {
        let result = try ProcessRunner.run(ChildServer.binaryPath, ["--version"])
        #expect(result.status == 0)
        #expect(result.stdoutText == LarderVersion.current + "\n")
    }

    @Test func everyPackageCarriesTheBinarysVersion() throws {
        let version = LarderVersion.current
        let node = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Repository.path("clients/node/package.json"))))
        #expect((node as? [String: Any])?["version"] as? String == version, "clients/node/package.json")
        let python = try String(contentsOfFile: Repository.path("clients/python/src/pytest_larder/__init__.py"), encoding: .utf8)
        #expect(python.contains("\n__version__ = \"\(version)\"\n"), "pytest_larder/__init__.py")
        let openapi = try String(contentsOfFile: Repository.path("openapi.yaml"), encoding: .utf8)
        #expect(openapi.contains("\n  version: \(version)\n"), "openapi.yaml info.version")
    }

    /// The npm package's entry point and binary are the files build-package.sh puts there.
    @Test func theNpmPackageNamesTheFilesItShips() throws {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Repository.path("clients/node/package.json"))))
        let package = try #require(object as? [String: Any])
        #expect(package["name"] as? String == "larder")
        #expect((package["bin"] as? [String: String])?["larder"] == "bin/larder")
        #expect(package["main"] as? String == "./larder.mjs")
        #expect(FileManager.default.fileExists(atPath: Repository.path("clients/node/larder.mjs")))
        #expect((package["dependencies"] as? [String: Any] ?? [:]).isEmpty, "no dependencies: it installs offline")
    }
}
