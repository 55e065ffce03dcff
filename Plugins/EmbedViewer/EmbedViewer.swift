import Foundation
import PackagePlugin

/// Builds the browser viewer into the binary: every file under the package's
/// `Public/` becomes part of a generated Swift source of the target it is
/// applied to (`LarderViewer`), with no manual step after an edit.
@main
struct EmbedViewer: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let publicDirectory = context.package.directoryURL.appending(path: "Public")
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedViewerFiles.swift")
        return [
            .buildCommand(
                displayName: "Embedding the viewer from Public/",
                executable: try context.tool(named: "ViewerEmbedder").url,
                arguments: [publicDirectory.path(), output.path()],
                inputFiles: Self.inputs(publicDirectory),
                outputFiles: [output]
            ),
        ]
    }

    /// `directory` and everything below it. The files make an edit rerun
    /// the tool; the folders (whose modification time changes when an entry
    /// is added or removed) make a new or deleted file rerun it too, since
    /// no target owns `Public/` and SwiftPM would not replan for it. The
    /// tool walks the folder itself, so its output never depends on a list
    /// made here.
    static func inputs(_ directory: URL) -> [URL] {
        guard let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil, options: [.skipsHiddenFiles]) else {
            return []
        }
        return [directory] + walker.compactMap { $0 as? URL }
    }
}
