import Dispatch
import LarderHTTP
import LarderRouting
import LarderSharing
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// One `GET ?wait=` request: a GET whose "nothing new" answer (304, or 404
/// when waiting for a key to appear) is held back until the key changes or
/// the deadline passes. The waiting is a `KeyWatch` (a watcher entry in the
/// hub and a parked connection, no thread); this is what it means in HTTP.
final class ValueWatch: Sendable {
    private let head: HTTPRequestHead
    private let responder: HTTPResponder
    private let representation: ValueRepresentation
    private let deadline: DispatchTime
    /// Without If-None-Match, a watch waits for an absent key to appear.
    private let waitsForCreation: Bool
    /// Whether the deadline answer is set (by the first "nothing new").
    private let parked = Locked(false)

    private init(_ request: RouteRequest, representation: ValueRepresentation, deadline: DispatchTime) {
        self.head = request.head
        self.responder = request.responder
        self.representation = representation
        self.deadline = deadline
        self.waitsForCreation = !request.head.headers.contains("If-None-Match")
    }

    /// Starts watching `key` for `request`; the answer comes through its
    /// responder (maybe before this returns: the route answers `.later`).
    static func start(_ key: StoreKey, _ request: RouteRequest, representation: ValueRepresentation,
                      hub: ChangeHub, until deadline: DispatchTime) {
        let answer = ValueWatch(request, representation: representation, deadline: deadline)
        let watch = KeyWatch(key: key, store: representation.store, hub: hub) { answer.look($0) }
        // The client left or the deadline answer went: stop waiting.
        request.responder.whenCancelled { watch.end() }
        watch.start()
    }

    /// One look at the value: answers, or holds the "nothing new" answer back.
    private func look(_ opened: Result<StoredValue, any Error>) -> KeyWatch.Verdict {
        let response: HTTPResponse
        do throws(HTTPError) {
            response = try representation.response(opened: opened, head)
        } catch {
            guard error.status == .notFound && waitsForCreation else {
                responder.respond(error.response)
                return .done
            }
            return nothingNew(error.response)
        }
        guard response.status == .notModified else {
            responder.respond(response)
            return .done
        }
        return nothingNew(response)
    }

    /// The first "nothing new" becomes the answer at the deadline; later
    /// ones are the same answer again.
    private func nothingNew(_ response: HTTPResponse) -> KeyWatch.Verdict {
        let first = parked.withLock { parked -> Bool in
            defer { parked = true }
            return !parked
        }
        if first { responder.answer(at: deadline, with: response) } else { response.discardBody() }
        return .waiting
    }
}
