import LarderDiskStore
import LarderStorage
import LarderValueFile
import FoundationEssentials
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// Walks a fixtures directory: every regular file under it with its path
/// relative to the top, in byte order of names. Symbolic links are followed
/// only while they resolve inside the directory: a link out of it (to
/// `/etc`, to a home directory) is skipped and reported, so a fixtures
/// folder never publishes files from elsewhere. A link to a directory
/// inside is an alias: its files appear under both names; a link back to a
/// directory being walked (a loop) is not followed. Names starting
/// with a dot (`.gitkeep`, `.DS_Store`) are not fixtures.
struct FixtureTreeWalker {
    /// The directory, with every symbolic link in its path resolved.
    let root: String
    /// Links skipped because they lead out of `root` (or nowhere).
    private(set) var linksNotFollowed: [String] = []
    /// The directories being walked (the current one and its parents), by
    /// device and inode: a link back to one of them is a loop.
    private var walking: Set<[UInt64]> = []

    init(directory: String) throws {
        guard let resolved = realpath(directory, nil) else { throw StoreError.posix("realpath", directory) }
        defer { free(resolved) }
        root = String(cString: resolved)
    }

    /// Calls `visit` with a file's path (inside `root`, links resolved) and
    /// its path relative to the top (the fixture's key).
    mutating func walk(_ visit: (_ path: String, _ relative: [UInt8]) throws -> Void) throws {
        try walk(root, relative: [], visit)
    }

    private mutating func walk(_ directory: String, relative: [UInt8],
                               _ visit: (_ path: String, _ relative: [UInt8]) throws -> Void) throws {
        guard let st = try POSIX.statIfExists(directory) else { return }
        let id = [UInt64(st.st_dev), UInt64(st.st_ino)]
        guard walking.insert(id).inserted else { return }
        defer { walking.remove(id) }
        guard let entries = try POSIX.directoryEntries(directory) else { return }
        for entry in entries.sorted(by: { $0.name.lexicographicallyPrecedes($1.name) }) where entry.name.first != 0x2E {
            var path = directory + "/" + String(decoding: entry.name, as: UTF8.self)
            let name = relative.isEmpty ? entry.name : relative + [0x2F] + entry.name
            guard let link = try POSIX.lstatIfExists(path) else { continue }
            if (link.st_mode & S_IFMT) == S_IFLNK {
                guard let inside = resolvedInside(path) else {
                    linksNotFollowed.append(path)
                    continue
                }
                path = inside
            }
            guard let target = try POSIX.statIfExists(path) else { continue }
            if POSIX.isDirectory(target) {
                try walk(path, relative: name, visit)
            } else if POSIX.isRegularFile(target) {
                try visit(path, name)
            }
        }
    }

    /// Where the link at `path` leads, when that is inside `root`; nil for a
    /// link out of it or a dangling one.
    private func resolvedInside(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        let target = String(cString: resolved)
        return target.hasPrefix(root == "/" ? "/" : root + "/") ? target : nil
    }
}
