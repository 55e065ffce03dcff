import LarderApp
import LarderHTTP
import LarderS3
import LarderStorage

/// A namespace as the S3 listener uses it: the store, journal and fault
/// rules the same namespace's plain API (`/store/`, `/ns/<name>/store/`)
/// has, so an S3 request is journaled, faulted and stored there as one of
/// the plain API's would be. Made once for the default namespace, and for
/// a named one per request (three references: the faces share no cache).
final class S3NamespaceView: S3Namespace {
    let store: any ValueStore
    private let journal: RequestJournal?
    private let faults: FaultBook?

    init(store: any ValueStore, journal: RequestJournal?, faults: FaultBook?) {
        self.store = store
        self.journal = journal
        self.faults = faults
    }

    /// A named namespace's.
    convenience init(_ world: NamespaceWorld) {
        self.init(store: world.store, journal: world.journal, faults: world.faults)
    }

    var hasFaults: Bool { faults != nil }

    func record(_ request: borrowing HTTPAnsweredRequest, _ response: borrowing HTTPResponse, op: String, target: String) {
        journal?.recordS3(request, response, op: op, target: target)
    }

    func fault(method: HTTPMethod, storePath: String) -> S3Fault? {
        guard let decision = faults?.decide(method: method, path: storePath[...]) else { return nil }
        return S3Fault(rule: decision.name, delayNanos: decision.delayNanos, status: decision.httpStatus,
                       network: decision.networkFault)
    }
}
