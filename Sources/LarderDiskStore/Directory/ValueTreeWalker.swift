import LarderStoreVocabulary
#if canImport(Glibc)
import LarderStorage
import LarderValueFile
import Glibc
#endif

/// Visits every value file and temp file below a values directory, in no
/// particular order: the one walker behind the start-up scan, counting a
/// prefix's values and finding expiring values. (Listings, which need byte
/// order and paging, have `DirectoryLister`.)
///
/// It streams `readdir`: a directory's names are never held all at once
/// (one directory of a million keys would otherwise cost ~100 MiB of names).
enum ValueTreeWalker {
    enum Found {
        case value(path: String)
        case temp(path: String, name: [UInt8])
    }

    /// Calls `visit` for each file found, until it returns false; an
    /// unreadable directory throws when `strict`, and is skipped otherwise;
    /// a missing one (a concurrent delete) is always skipped. Returns
    /// whether the walk went to the end.
    @discardableResult
    static func walk(_ root: String, strict: Bool = false, _ visit: (Found) -> Bool) throws -> Bool {
        let reader: DirectoryReader?
        do {
            reader = try DirectoryReader(root)
        } catch {
            if !strict { return true }
            throw error
        }
        guard let reader else { return true }
        while let (name, isDirectory) = reader.next() {
            let path = root + "/" + String(decoding: name, as: UTF8.self)
            switch DiskNames.classify(name: name, isDirectory: isDirectory) {
            case .value: if !visit(.value(path: path)) { return false }
            case .temp: if !visit(.temp(path: path, name: name)) { return false }
            case .directory: if try !walk(path, strict: strict, visit) { return false }
            case .other: break
            }
        }
        return true
    }
}
