import FoundationEssentials

/// The viewer's files as built into the binary by the EmbedViewer plugin
/// (`encodedFiles` is generated from `Public/`), decoded once on first use.
enum EmbeddedViewer {
    static let files: [String: ViewerFile] = {
        var files: [String: ViewerFile] = [:]
        for (path, base64) in encodedFiles {
            // The plugin wrote the base64 itself: it always decodes.
            files[path] = ViewerFile(path: path, bytes: Array(Data(base64Encoded: base64)!))
        }
        return files
    }()
}
