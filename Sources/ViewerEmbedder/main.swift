import Foundation

// The EmbedViewer plugin's tool: `ViewerEmbedder PUBLIC_DIR OUTPUT` writes
// OUTPUT, a Swift source that lists every regular file below PUBLIC_DIR
// (relative path, bytes; hidden files such as `.DS_Store` left out, sorted so
// the source does not depend on the file system's order). The bytes go in as base64 string literals: the Swift
// compiler type-checks a long `[UInt8]` literal element by element (minutes
// for a few hundred KiB), a string literal in no time; decoding it once at
// start costs microseconds.

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: ViewerEmbedder PUBLIC_DIR OUTPUT\n".utf8))
    exit(2)
}
let publicDirectory = URL(fileURLWithPath: arguments[1]).resolvingSymlinksInPath().path
let output = arguments[2]

/// The regular files below `directory`, relative to it, sorted.
func files(under directory: String) -> [String] {
    guard let walker = FileManager.default.enumerator(
        at: URL(fileURLWithPath: directory), includingPropertiesForKeys: [.isRegularFileKey], options: [.skipsHiddenFiles]
    ) else { return [] }
    let prefix = directory + "/"
    var found: [String] = []
    for case let url as URL in walker {
        guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
        let path = url.resolvingSymlinksInPath().path
        if path.hasPrefix(prefix) { found.append(String(path.dropFirst(prefix.count))) }
    }
    return found.sorted()
}
let paths = files(under: publicDirectory)

// The server answers only paths made of these characters (ViewerPath), so a
// file named otherwise could never be fetched: fail the build instead.
let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/")
for path in paths where !path.allSatisfy(allowed.contains) || path.split(separator: "/").contains(where: { $0.hasPrefix(".") }) {
    FileHandle.standardError.write(Data("error: Public/\(path): viewer file names may use only A-Z a-z 0-9 . _ - and not start with a dot\n".utf8))
    exit(1)
}

var source = """
// Generated at build time by the EmbedViewer plugin (Plugins/EmbedViewer)
// from Public/. Not checked in; edit Public/ instead.

extension EmbeddedViewer {
    static let encodedFiles: [(path: String, base64: String)] = [

"""
for path in paths {
    guard let data = FileManager.default.contents(atPath: publicDirectory + "/" + path) else {
        FileHandle.standardError.write(Data("error: cannot read Public/\(path)\n".utf8))
        exit(1)
    }
    source += "        (\"\(path)\", \"\(data.base64EncodedString())\"),\n"
}
source += "    ]\n}\n"

// Rewrite only on a change, so an unchanged Public/ recompiles nothing.
let bytes = Data(source.utf8)
if FileManager.default.contents(atPath: output) != bytes {
    do {
        try bytes.write(to: URL(fileURLWithPath: output), options: .atomic)
    } catch {
        FileHandle.standardError.write(Data("error: cannot write \(output): \(error)\n".utf8))
        exit(1)
    }
}
