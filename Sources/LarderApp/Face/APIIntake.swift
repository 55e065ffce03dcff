import LarderHTTP
import LarderRouting

/// The server table's first step for every request (`RequestIntake`):
/// puts it in its namespace's journal, and mounts a request under
/// `/ns/<name>/` of a namespace that exists on that namespace's world, so
/// the server's chain runs once and the namespace's own table routes the rest.
final class APIIntake: RequestIntake {
    /// nil: `--journal 0`.
    let journal: JournalAttachment?
    /// nil: the store has no namespaces.
    let namespaces: Namespaces?

    init(journal: JournalAttachment?, namespaces: Namespaces?) {
        self.journal = journal
        self.namespaces = namespaces
    }

    @inline(__always)
    func admit(_ head: HTTPRequestHead, path: Substring, _ responder: HTTPResponder) -> Mount? {
        // The journal's attachment looks the namespace up (it needs it too).
        guard let found = journal.map({ $0.attach(path: path, to: responder) }) ?? namespaces?.existing(in: path) else { return nil }
        return Mount(found.world, prefixBytes: found.prefixBytes)
    }

    func answerObserver(forRefused head: HTTPRequestHead) -> (any HTTPAnswerObserver)? {
        journal?.journal(for: head.path)
    }
}
