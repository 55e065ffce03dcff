import Foundation

/// Fixture directories (`--fixtures DIR`) for the suites that run a server
/// over fixtures: `LarderFixturesTests`, and the namespace suites of
/// `LarderAppTests`, whose namespaces share one fixture layer.
package enum FixtureDirectories {
    /// A new temporary directory holding `count` small JSON fixtures under
    /// `f/` (`f/0000.json`, …), for the caller to remove.
    package static func numbered(_ count: Int) throws -> String {
        let dir = TestServer.makeTempDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/f", withIntermediateDirectories: true)
        for i in 0..<count {
            try Data("{\"i\":\(i)}".utf8).write(to: URL(fileURLWithPath: dir + "/f/\(String(format: "%04d", i)).json"))
        }
        return dir
    }
}
