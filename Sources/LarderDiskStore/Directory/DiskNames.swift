import LarderValueFile
import LarderStoreVocabulary

/// How keys become names on disk below the values directory.
///
/// The last segment of a key is a file named exactly like the segment. Every
/// other segment is a directory named like the segment plus a backslash, a
/// byte no key may contain: so `a` (file `a`) and `a/b` (directory `a\`,
/// file `b`) live side by side, and no key can name a temp file or leave the
/// directory (`.`, `..`, `/` and NUL never reach here). A 255-byte segment
/// has no room for the backslash under NAME_MAX, so as a directory it is
/// named by a hash and the real segment is kept in a `\name` file inside.
enum DiskNames {
    static let backslash: UInt8 = 0x5C
    /// Temp files of in-flight writes: `\t<hex>`; never a key, never a directory.
    static let tempPrefix = "\\t"
    /// Inside a hashed directory: the segment it stands for.
    static let hashedNameFile = "\\name"
    static let hashedPrefix = "\\h"

    static func directoryName(_ segment: String) -> String {
        if segment.utf8.count < StoreKey.maxSegmentBytes { return segment + "\\" }
        return hashedPrefix + hash(segment)
    }

    static func isHashedDirectory(_ segment: String) -> Bool {
        segment.utf8.count >= StoreKey.maxSegmentBytes
    }

    static func relativeDirectories(_ segments: some Collection<String>) -> [String] {
        segments.map(directoryName)
    }

    static func relativePath(of key: StoreKey) -> String {
        if let path = plainPath(key.bytes, withFile: true) { return path }
        var path = ""
        for segment in key.segments.dropLast() {
            path += directoryName(segment)
            path += "/"
        }
        return path + key.segments.last!
    }

    /// The directories of `key`'s file, each followed by `/` (empty for a
    /// key of one segment).
    static func relativeDirectory(of key: StoreKey) -> String {
        if let path = plainPath(key.bytes, withFile: false) { return path }
        return relativeDirectories(key.segments.dropLast()).map { $0 + "/" }.joined()
    }

    /// The key's path (or only its directories' part) when no directory is
    /// hashed: the key's bytes with a backslash before every `/`, written
    /// in one pass (every write asks for it twice). Nil when a directory
    /// segment is too long to be named plainly.
    private static func plainPath(_ key: [UInt8], withFile: Bool) -> String? {
        key.withUnsafeBufferPointer { bytes -> String? in
            var slashes = 0, run = 0, lastSlash = -1
            for (i, c) in bytes.enumerated() where c == 0x2F {
                run = i - lastSlash - 1
                if run >= StoreKey.maxSegmentBytes { return nil }
                slashes += 1
                lastSlash = i
            }
            let end = withFile ? bytes.count : lastSlash + 1
            return String(unsafeUninitializedCapacity: end + slashes) { out in
                var o = 0
                for i in 0..<end {
                    if bytes[i] == 0x2F { out[o] = backslash; o += 1 }
                    out[o] = bytes[i]
                    o += 1
                }
                return o
            }
        }
    }

    static func relativePath(of prefix: StorePrefix) -> String {
        prefix.segments.map(directoryName).joined(separator: "/")
    }

    enum Entry {
        case value(segment: [UInt8])
        case directory(segment: [UInt8]?)   // nil: hashed, read `\name`
        case temp
        case other
    }

    /// What a directory entry's name is.
    static func classify(name: [UInt8], isDirectory: Bool) -> Entry {
        if isDirectory {
            if name.last == backslash, name.count > 1, !name.dropLast().contains(backslash) {
                return .directory(segment: Array(name.dropLast()))
            }
            if name.starts(with: Array(hashedPrefix.utf8)) { return .directory(segment: nil) }
            return .other
        }
        if name.first == backslash {
            return name.starts(with: Array(tempPrefix.utf8)) ? .temp : .other
        }
        return .value(segment: name)
    }

    /// 128 bits from two FNV-1a passes, as 32 hex digits. Only 255-byte
    /// directory segments use it, and the `\name` file inside keeps the truth.
    static func hash(_ segment: String) -> String {
        var a: UInt64 = 0xcbf29ce484222325
        var b: UInt64 = 0x84222325cbf29ce4
        for byte in segment.utf8 {
            a = (a ^ UInt64(byte)) &* 0x100000001b3
            b = (b ^ UInt64(byte ^ 0x5A)) &* 0x100000001b3
        }
        return hex(a) + hex(b)
    }

    static func hex(_ value: UInt64) -> String { VersionHex.hex(value) }
}
