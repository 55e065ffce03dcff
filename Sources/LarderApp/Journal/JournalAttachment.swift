import LarderHTTP
import LarderRouting
#if canImport(Glibc)
import Glibc
#endif

/// Puts each request in its namespace's journal: the journal is made the
/// observer of the request's answer (`HTTPAnswerObserver`), so the
/// connection hands it the final answer, after every middleware (a CORS
/// preflight, a 401, a fault count too), with the time and the body bytes
/// it measured.
///
/// A step of the server's route table, before its middleware, rather than
/// a link of the chain: it runs for every request, and a link costs one
/// ~700 instructions of chain machinery (Benchmarks/callgrind.sh). It
/// costs a request no allocation and no clock read of its own.
///
/// A request under `/ns/<name>/` goes to that namespace's journal; the
/// world it looks up is handed to the table, which does not look again. A
/// request that makes its namespace is given its journal by
/// `NamespaceRoute`, once the namespace exists. Requests to `/journal`,
/// `/healthz`, `/metrics` and the viewer's files are not recorded.
struct JournalAttachment: Sendable {
    /// The default namespace's journal.
    let journal: RequestJournal
    let namespaces: Namespaces?

    /// Attaches the journal of the request's namespace; returns that
    /// namespace when it is a named one that exists, with the bytes of
    /// `path` that name it.
    func attach(path: Substring, to responder: HTTPResponder) -> (world: NamespaceWorld, prefixBytes: Int)? {
        // A store request of the default namespace, the common case, is
        // known by its second byte, with no look for a namespace.
        if Self.isStoreRequest(path) {
            responder.observe(with: journal)
            return nil
        }
        guard let (name, prefixBytes) = NamespacePath.split(path) else {
            Self.attach(journal, to: responder, path: path, from: 0)
            return nil
        }
        guard let world = namespaces?.existing(name) else {
            // Not a namespace (yet): the server's own journal, unless the
            // request makes it (`NamespaceRoute` then gives it its own).
            Self.attach(journal, to: responder, path: path, from: 0)
            return nil
        }
        if let journal = world.journal { Self.attach(journal, to: responder, path: path, from: prefixBytes) }
        return (world, prefixBytes)
    }

    /// The journal a request for `path` goes to, if it is recorded (for
    /// one refused before it is handled; it makes no namespace).
    func journal(for path: Substring) -> RequestJournal? {
        if let (name, prefixBytes) = NamespacePath.split(path), let world = namespaces?.existing(name) {
            guard let journal = world.journal, Self.isRecorded(path, from: prefixBytes) else { return nil }
            return journal
        }
        return Self.isRecorded(path, from: 0) ? journal : nil
    }

    /// `/s...`: the store's paths (`/store/...`, `/snapshot`), always recorded.
    @inline(__always)
    static func isStoreRequest(_ path: Substring) -> Bool {
        path.utf8.withContiguousStorageIfAvailable { $0.count >= 2 && $0[1] == UInt8(ascii: "s") } ?? false
    }

    /// Makes `journal` the observer of the answer, unless the path inside
    /// the namespace (`path` after `offset` bytes) is one not recorded.
    static func attach(_ journal: RequestJournal, to responder: HTTPResponder, path: Substring, from offset: Int) {
        responder.observe(with: isRecorded(path, from: offset) ? journal : nil)
    }

    /// Whether requests to `path` after `offset` bytes (the path inside its
    /// namespace) are recorded: not the journal's own, nor health checks,
    /// scrapes and the viewer's files. Read in place; a store request, the
    /// common case, is decided by its second byte.
    static func isRecorded(_ path: Substring, from offset: Int) -> Bool {
        let decided = path.utf8.withContiguousStorageIfAvailable { all -> Bool in
            let bytes = UnsafeBufferPointer(rebasing: all[offset...])
            guard bytes.count >= 2, bytes[0] == UInt8(ascii: "/") else { return bytes.count != 1 }  // `/`: the viewer
            func `is`(_ s: StaticString) -> Bool {
                bytes.count == s.utf8CodeUnitCount && memcmp(bytes.baseAddress!, s.utf8Start, bytes.count) == 0
            }
            switch bytes[1] {
            case UInt8(ascii: "s"): return true
            case UInt8(ascii: "j"): return !`is`("/journal")
            case UInt8(ascii: "h"): return !`is`("/healthz")
            case UInt8(ascii: "m"): return !`is`("/metrics")
            case UInt8(ascii: "v"):
                let viewer: StaticString = "/viewer/"
                return !(`is`("/viewer") || (bytes.count >= viewer.utf8CodeUnitCount
                                              && memcmp(bytes.baseAddress!, viewer.utf8Start, viewer.utf8CodeUnitCount) == 0))
            default: return true
            }
        }
        // A path without contiguous storage (never from the parser): recorded.
        return decided ?? true
    }
}
