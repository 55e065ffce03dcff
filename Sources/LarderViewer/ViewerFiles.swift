import FoundationEssentials

/// Where the viewer's files come from: the copy built into the binary, or
/// a directory on disk (`--public-dir`, for working on the viewer without
/// rebuilding).
package enum ViewerFiles: Sendable {
    case embedded
    case directory(String)

    /// The file at `relative`, already checked by `ViewerPath.normalized`;
    /// nil when there is none.
    package func file(_ relative: String) -> ViewerFile? {
        switch self {
        case .embedded:
            return EmbeddedViewer.files[relative]
        case .directory(let directory):
            // Read on each request, so an edit shows on the next reload.
            guard let data = FileManager.default.contents(atPath: directory + "/" + relative) else { return nil }
            return ViewerFile(path: relative, bytes: Array(data))
        }
    }

    /// Every path of the built-in copy, sorted (for tests and diagnostics).
    package static var embeddedPaths: [String] { EmbeddedViewer.files.keys.sorted() }
}
