/// Content types by file extension: for the viewer's files and for fixture
/// files, whose extension is all that says what they hold.
public enum MediaType {
    public static let octetStream = "application/octet-stream"

    /// The type for `name`'s extension (case-insensitive), else `application/octet-stream`.
    public static func forFileName(_ name: some StringProtocol) -> String {
        guard let dot = name.lastIndex(of: "."), !name[dot...].contains("/") else { return octetStream }
        return byExtension[name[name.index(after: dot)...].lowercased()] ?? octetStream
    }

    private static let byExtension: [String: String] = [
        "json": "application/json",
        "ndjson": "application/x-ndjson",
        "txt": "text/plain; charset=utf-8",
        "text": "text/plain; charset=utf-8",
        "md": "text/markdown; charset=utf-8",
        "csv": "text/csv; charset=utf-8",
        "html": "text/html; charset=utf-8",
        "htm": "text/html; charset=utf-8",
        "css": "text/css; charset=utf-8",
        "js": "text/javascript; charset=utf-8",
        "mjs": "text/javascript; charset=utf-8",
        "xml": "application/xml",
        "yaml": "application/yaml",
        "yml": "application/yaml",
        "svg": "image/svg+xml",
        "png": "image/png",
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "gif": "image/gif",
        "webp": "image/webp",
        "ico": "image/x-icon",
        "pdf": "application/pdf",
        "gz": "application/gzip",
        "zip": "application/zip",
        "bin": "application/octet-stream",
    ]
}
