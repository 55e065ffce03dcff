import LarderStorage
import LarderValueFile
import FoundationEssentials
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// The commit point of a disk restore, `<data>/restore/<id>/intent`: once
/// it is on disk the restore is published, now or at the next start-up
/// (`DiskStore.recoverRestores`). One JSON object:
///
///     {"replace": true, "prefix": "users/", "generation": 7}
///
/// `generation`: for a replace of the whole store, the `gen-N` the staged
/// tree becomes (chosen before the intent is written, so that a crash
/// between renaming the tree and pointing `values` at it is finished, not
/// taken for a leftover generation).
struct RestoreIntent: Codable, Equatable {
    var replace: Bool
    var prefix: String
    var generation: Int?

    static let fileName = "intent"

    func storePrefix() throws -> StorePrefix { try StorePrefix(bytes: Array(prefix.utf8)) }

    /// Writes the intent into `directory` (temp file, rename), durable once
    /// the next flush is: the caller waits for it before publishing.
    func write(into directory: String, fsync: Bool) throws {
        let path = directory + "/" + Self.fileName
        let temp = path + ".new"
        let bytes = Array(try JSONEncoder().encode(self))
        let fd = try POSIX.open(temp, O_WRONLY | O_CREAT | O_TRUNC)
        defer { Glibc.close(fd) }
        try bytes.withUnsafeBytes { try POSIX.writeAll(fd, $0, path: temp) }
        if fsync { try POSIX.fsync(fd, path: temp) }
        if rename(temp, path) != 0 { throw StoreError.posix("rename", temp) }
    }

    /// The intent in `directory`; nil when there is none (the restore never
    /// reached its commit point). A damaged one throws: a person should look.
    static func read(from directory: String) throws -> RestoreIntent? {
        let path = directory + "/" + fileName
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(RestoreIntent.self, from: data)
        } catch {
            throw StoreError.corrupt(path: path, reason: "the restore's intent cannot be read: \(error)")
        }
    }
}
