import Foundation

/// The repository's top folder (Package.swift, Dockerfile, openapi.yaml,
/// Public/, README.md): where tests find the files they check, from any
/// working directory.
package enum Repository {
    /// Found from this file's own path, `Tests/LarderTestSupport/Repository.swift`:
    /// three folders up. (The one place that counts folders: a test that
    /// moves does not change it.)
    package static let root: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()   // LarderTestSupport
        .deletingLastPathComponent()   // Tests
        .deletingLastPathComponent()   // the repository
        .path

    /// `relative` (e.g. "docker/check_compose.py") under the repository's top folder.
    package static func path(_ relative: String) -> String { root + "/" + relative }
}
