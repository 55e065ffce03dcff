/// Visits every value file and temp file below a values directory, in no
/// particular order: the one walker behind the start-up scan, counting a
/// prefix's values and finding expiring values. (Listings, which need byte
/// order and paging, have `DirectoryLister`.)
enum ValueTreeWalker {
    enum Found {
        case value(path: String)
        case temp(path: String)
    }

    /// Calls `visit` for each file found; an unreadable directory throws
    /// when `strict`, and is skipped otherwise (a concurrent delete).
    static func walk(_ root: String, strict: Bool = false, _ visit: (Found) -> Void) throws {
        let entries: [(name: [UInt8], isDirectory: Bool)]?
        if strict { entries = try POSIX.directoryEntries(root) } else { entries = (try? POSIX.directoryEntries(root)) ?? nil }
        guard let entries else { return }
        for entry in entries {
            let path = root + "/" + String(decoding: entry.name, as: UTF8.self)
            switch DiskNames.classify(name: entry.name, isDirectory: entry.isDirectory) {
            case .value: visit(.value(path: path))
            case .temp: visit(.temp(path: path))
            case .directory: try walk(path, strict: strict, visit)
            case .other: break
            }
        }
    }
}
