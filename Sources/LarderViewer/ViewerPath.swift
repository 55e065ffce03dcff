/// Which request paths may name a viewer file. Checked before any lookup,
/// so `..`, percent-encoding (`%2e%2e`), backslashes and hidden files never
/// reach the disk under `--public-dir`. The viewer's own file names keep to
/// these characters (the EmbedViewer plugin fails the build otherwise).
package enum ViewerPath {
    /// `relative` (below `Public/`, no leading `/`) when it is safe to look
    /// up, else nil. An empty path or a trailing `/` means that folder's
    /// `index.html`.
    package static func normalized(_ relative: Substring) -> String? {
        var path = String(relative)
        if path.isEmpty || path.hasSuffix("/") { path += "index.html" }
        guard path.utf8.allSatisfy(isAllowed) else { return nil }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !segments.contains(where: { $0.isEmpty || $0.hasPrefix(".") }) else { return nil }
        return path
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
             UInt8(ascii: "-"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }
}
