import Dispatch
import LarderModel
import LarderHTTP
import LarderStorage
import LarderValueFile
import LarderSupport

/// The second half of `POST /snapshot`: a document read whole and found
/// valid (`RestoreStaging`) is written into the store, value after value,
/// and the request is answered. Each write answers now (the disk store: the
/// restore runs on, on the connection's thread) or later (a flush, a
/// database: it goes on from a Dispatch thread once the answer comes), so
/// no thread waits on the store.
///
/// Used by one thread at a time: the connection's queue, then each thread
/// a later answer moves it to.
final class RestoreApply: @unchecked Sendable {
    /// Handed over by the restore once its body is complete; used only here.
    private let staging: RestoreStaging
    private let store: any ValueStore
    private let prefix: StorePrefix
    private let replace: Bool
    private let responder: HTTPResponder
    private let logger: Logger
    /// Values restored so far.
    private var restored = 0
    /// Whether `replace` has cleared the prefix.
    private var cleared = false

    init(staging: RestoreStaging, store: any ValueStore, prefix: StorePrefix, replace: Bool,
         responder: HTTPResponder, logger: Logger) {
        self.staging = staging
        self.store = store
        self.prefix = prefix
        self.replace = replace
        self.responder = responder
        self.logger = logger
    }

    /// Clears the prefix first with `replace`, then writes every value.
    func run() {
        guard replace else { return writeValues() }
        switch store.deletePrefix(prefix) {
        case .now(let result): cleared(result)
        case .later(let pending): pending.whenDone { result in DispatchQueue.global().async { self.cleared(result) } }
        }
    }

    private func cleared(_ result: Result<Int, any Error>) {
        guard case .failure(let error) = result else {
            cleared = true
            return writeValues()
        }
        fail(error)
    }

    /// Writes values while the store answers now; at a later answer, goes
    /// on from `written` when it comes.
    private func writeValues() {
        while true {
            let reply: StoreReply<PutOutcome>
            do {
                guard let next = try staging.writeNext(to: store) else { return succeed() }
                reply = next
            } catch {
                return fail(error)
            }
            switch reply {
            case .now(.success): restored += 1
            case .now(.failure(let error)): return fail(error)
            case .later(let pending):
                // Off the store's thread: the next values' file I/O is ours.
                pending.whenDone { result in DispatchQueue.global().async { self.written(result) } }
                return
            }
        }
    }

    private func written(_ result: Result<PutOutcome, any Error>) {
        guard case .failure(let error) = result else {
            restored += 1
            return writeValues()
        }
        fail(error)
    }

    private func succeed() {
        staging.discard()
        responder.respond(.json(.ok, RestoreCount(restored: restored, skipped: staging.skipped)))
    }

    /// The document was valid: the store failed (disk full, database
    /// gone). Says what it holds now.
    private func fail(_ error: any Error) {
        staging.discard()
        let mapped = ErrorMapping.httpError(error, logger: logger, context: "POST /snapshot")
        let state = (cleared ? "the prefix was cleared and " : "")
            + "\(restored) of \(staging.staged) values were restored before it"
        responder.respond(HTTPError(mapped.status, mapped.code, "the snapshot is valid, but the store failed while applying it: \(mapped.message); \(state)",
                                    headers: mapped.headers, closeConnection: mapped.closeConnection).response)
    }
}
