import Synchronization

/// The numbers the journals of one server give their entries: one counter
/// for every namespace, so a number is never given twice while the server
/// runs, not even to a namespace dropped and made again (a client
/// following `/ns/w1/journal` with `since` would otherwise skip the new
/// `w1`'s entries until its numbers passed the old ones). A namespace's
/// entries are in rising order, with gaps where other namespaces' came.
final class JournalSequence: Sendable {
    private let last = Atomic<UInt64>(0)

    /// The next number.
    func next() -> UInt64 { last.add(1, ordering: .relaxed).newValue }

    /// The last number given (0: none yet).
    var current: UInt64 { last.load(ordering: .relaxed) }
}
