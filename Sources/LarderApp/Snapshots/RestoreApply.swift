import Dispatch
import LarderModel
import LarderHTTP
import LarderRouting
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// The second half of `POST /snapshot`: a document read whole and found
/// valid (`RestoreStaging`) is handed to the store as one restore
/// transaction (`RestoreTransaction`): every value staged, in document
/// order, then published in one step, and the request answered. The store
/// makes it all or nothing through failures and crashes too (the disk
/// store stages files and logs its intent, PostgreSQL uses one
/// transaction), so a reader sees the old values or the new ones.
///
/// Staging answers now or later (a store may stage over the network); the
/// commit answers later once the restore is durable, and no thread waits.
/// Used by one thread at a time: the connection's loop, then each thread
/// a later answer moves it to.
final class RestoreApply: @unchecked Sendable {
    /// Handed over by the restore once its body is complete; used only here.
    private let staging: RestoreStaging
    private let store: any ValueStore
    private let prefix: StorePrefix
    private let replace: Bool
    private let responder: HTTPResponder
    private let logger: Logger
    private var transaction: (any RestoreTransaction)?

    init(staging: RestoreStaging, store: any ValueStore, prefix: StorePrefix, replace: Bool,
         responder: HTTPResponder, logger: Logger) {
        self.staging = staging
        self.store = store
        self.prefix = prefix
        self.replace = replace
        self.responder = responder
        self.logger = logger
    }

    func run() {
        do {
            transaction = try store.beginRestore(under: prefix, replace: replace)
        } catch {
            return fail(error)
        }
        stageValues()
    }

    /// Stages values while the store answers now; at a later answer, goes
    /// on from `staged` when it comes. Then commits.
    private func stageValues() {
        guard let transaction else { return }
        while true {
            let reply: StoreReply<PutOutcome>
            do {
                guard let next = try staging.stageNext(into: transaction) else { return commit(transaction) }
                reply = next
            } catch {
                return fail(error)
            }
            switch reply {
            case .now(.success): continue
            case .now(.failure(let error)): return fail(error)
            case .later(let pending):
                // Off the store's thread: the next values' file I/O is ours.
                pending.whenDone { result in DispatchQueue.global().async { self.staged(result) } }
                return
            }
        }
    }

    private func staged(_ result: Result<PutOutcome, any Error>) {
        if case .failure(let error) = result { return fail(error) }
        stageValues()
    }

    private func commit(_ transaction: any RestoreTransaction) {
        staging.discard()
        transaction.commit().whenDone { result in
            switch result {
            case .success:
                // `restored` counts lines, as the document has them (a key
                // on two lines is restored twice, its last value kept).
                self.responder.respond(.json(.ok, RestoreCount(restored: self.staging.staged, skipped: self.staging.skipped)))
            case .failure(let error):
                self.fail(error)
            }
        }
    }

    /// The document was valid: the store failed (a full disk, a lost
    /// database) before the restore was published, so nothing of it was.
    private func fail(_ error: any Error) {
        staging.discard()
        transaction?.abort()
        let mapped = ErrorMapping.httpError(error, logger: logger, context: "POST /snapshot")
        responder.respond(HTTPError(mapped.status, mapped.code,
                                    "the snapshot is valid, but the store failed while applying it: \(mapped.message); "
                                        + "nothing was restored (the prefix holds what it held before)",
                                    headers: mapped.headers, closeConnection: mapped.closeConnection).response)
    }
}
