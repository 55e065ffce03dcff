import LarderModel
import LarderHTTP
import LarderStorage
import LarderValueFile
import LarderSupport

/// The second half of `POST /snapshot`: a document read whole and found
/// valid (`RestoreStaging`) is written into the store, and the request is
/// answered. Runs on a store-work thread for a store that answers later,
/// inline on the connection's thread for the disk store.
struct RestoreApply: @unchecked Sendable {
    /// Handed over by the restore once its body is complete; used only here.
    let staging: RestoreStaging
    let store: any ValueStore
    let prefix: StorePrefix
    let replace: Bool
    let responder: HTTPResponder
    let logger: Logger

    func run() {
        let skipped = staging.skipped, staged = staging.staged
        do {
            let restored = try staging.apply(to: store, prefix: prefix, replace: replace)
            responder.respond(.json(.ok, RestoreCount(restored: restored, skipped: skipped)))
        } catch {
            // The document was valid: the store failed (disk full, database
            // gone). Say what it holds now.
            let mapped = ErrorMapping.httpError(error.error, logger: logger, context: "POST /snapshot")
            let state = (error.cleared ? "the prefix was cleared and " : "")
                + "\(error.restored) of \(staged) values were restored before it"
            responder.respond(HTTPError(mapped.status, mapped.code, "the snapshot is valid, but the store failed while applying it: \(mapped.message); \(state)",
                                        headers: mapped.headers, closeConnection: mapped.closeConnection).response)
        }
    }
}
