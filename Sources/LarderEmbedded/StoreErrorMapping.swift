import LarderKit
import LarderModel
import LarderStore
#if canImport(Glibc)
import Glibc
#endif

extension LarderError {
    /// The one place a store failure becomes a `LarderError`, with the
    /// status the server would answer (see `LarderError.status`).
    static func from(_ error: any Error, key: String) -> any Error {
        guard let e = error as? StoreError else { return error }
        switch e {
        case .invalidKey(let why): return LarderError.invalidKey(key, reason: why)
        case .notFound: return LarderError.notFound(key: key)
        case .preconditionFailed: return LarderError.preconditionFailed(key: key)
        case .io(_, _, let code) where code == ENOSPC || code == EDQUOT:
            return LarderError.cannotWrite(key: key, reason: "the disk is full: \(e)")
        case .io, .tooLarge, .invalidGzip, .invalidContentType:
            return LarderError.cannotWrite(key: key, reason: e.description)
        case .locked(let path, _):
            return LarderError.directoryLocked(path: path, reason: e.description)
        case .contention:
            return LarderError.server(status: 503, error: ErrorBody(.busy, e.description))
        case .corrupt, .zlib, .invalidFixtures:
            return LarderError.server(status: 500, error: ErrorBody(.internalError, e.description))
        }
    }
}
