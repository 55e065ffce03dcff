import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Everything the store can fail with. The app maps each case to an HTTP
/// status; the store itself knows nothing about HTTP.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// The key breaks a key rule; the string says which.
    case invalidKey(String)
    /// No value under that key.
    case notFound
    /// A body declared as gzip is not valid gzip; the string says why.
    case invalidGzip(String)
    /// The value is larger than the store accepts (a gzip body that
    /// decompresses past the limit).
    case tooLarge(limit: Int64)
    /// A content type that cannot be stored (too long, control bytes).
    case invalidContentType(String)
    /// Attributes a face cannot keep with a value (too large, or their
    /// length changed once the body began: `ValueWriter.setAttributes`).
    case invalidAttributes(String)
    /// Another process holds the data directory's lock.
    case locked(path: String, holder: String)
    /// A system call failed.
    case io(operation: String, path: String, errno: Int32)
    /// A value file exists but cannot be understood.
    case corrupt(path: String, reason: String)
    /// zlib reported an error that is not about the input.
    case zlib(operation: String, code: Int32)
    /// A read-modify-write lost the race to other writers too many times.
    case contention(key: String)
    /// The fixture directory cannot be used; the string says why.
    case invalidFixtures(String)
    /// A write condition (`WriteConditions`) did not hold for the current value.
    case preconditionFailed
    /// The store's backend (a database) cannot be reached or is restarting;
    /// the string says why. Worth retrying shortly.
    case backendUnavailable(String)

    public var description: String {
        switch self {
        case .invalidKey(let why): return "invalid key: \(why)"
        case .notFound: return "no value stored under this key"
        case .invalidGzip(let why): return "the body is not valid gzip: \(why)"
        case .tooLarge(let limit): return "the value is larger than \(limit) bytes"
        case .invalidContentType(let why): return "invalid content type: \(why)"
        case .invalidAttributes(let why): return "the value's attributes cannot be kept: \(why)"
        case .locked(let path, let holder):
            return "another larder server (\(holder)) is already using this data directory (lock file \(path) is held)"
        case .io(let op, let path, let code):
            return "\(op) \(path) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .corrupt(let path, let reason): return "value file \(path) is corrupt: \(reason)"
        case .zlib(let op, let code): return "zlib \(op) failed with code \(code)"
        case .contention(let key): return "\(key) is being written by too many clients at once"
        case .invalidFixtures(let why): return "fixtures: \(why)"
        case .preconditionFailed: return "the write condition does not hold for the current value"
        case .backendUnavailable(let why): return "the database is unavailable: \(why)"
        }
    }

    package static func posix(_ operation: String, _ path: String, _ code: Int32 = errno) -> StoreError {
        .io(operation: operation, path: path, errno: code)
    }
}
