import LarderKit
import LarderModel
import LarderDiskStore
import LarderStorage
import LarderValueFile
import LarderSharing
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

extension LarderError {
    /// The one place a store failure becomes a `LarderError`, with the
    /// status the server would answer (see `LarderError.status`).
    static func from(_ error: any Error, key: String) -> any Error {
        if let e = error as? JSONUpdateError {
            switch e {
            case .bodyNotJSON, .storedNotJSON: return LarderError.notJSON(key: key, reason: e.description)
            case .bodyTooLarge: return LarderError.cannotWrite(key: key, reason: e.description)
            }
        }
        guard let e = error as? StoreError else { return error }
        switch e {
        case .invalidKey(let why): return LarderError.invalidKey(key, reason: why)
        case .notFound: return LarderError.notFound(key: key)
        case .preconditionFailed: return LarderError.preconditionFailed(key: key)
        case .io(_, _, let code) where code == ENOSPC || code == EDQUOT:
            return LarderError.cannotWrite(key: key, reason: "the disk is full: \(e)")
        // A value the store refuses to keep: the client maps the server's
        // 413 and 400 invalid_content_type to `cannotWrite` too.
        case .tooLarge, .invalidContentType, .invalidAttributes:
            return LarderError.cannotWrite(key: key, reason: e.description)
        // The server's 400 invalid_gzip, as the client sees it.
        case .invalidGzip(let why):
            return LarderError.server(status: 400, error: ErrorBody(.invalidGzip, "the body is not valid gzip: \(why)"))
        // Any other I/O failure (a read as well as a write) is the server's
        // 500 internal_error, not "cannot write".
        case .io:
            return LarderError.server(status: 500, error: ErrorBody(.internalError, e.description))
        case .locked(let path, _):
            return LarderError.directoryLocked(path: path, reason: e.description)
        case .contention:
            return LarderError.server(status: 503, error: ErrorBody(.busy, e.description))
        case .backendUnavailable:
            return LarderError.server(status: 503, error: ErrorBody(.backendUnavailable, e.description))
        case .corrupt, .zlib, .invalidFixtures:
            return LarderError.server(status: 500, error: ErrorBody(.internalError, e.description))
        }
    }
}
