import Dispatch
import LarderHTTP
import LarderRouting
import LarderModel
import LarderSupport
import LarderStorage

/// One namespace's request journal: the last `capacity` answered requests
/// in a ring, and the `GET /journal?wait=` requests waiting for the next.
///
/// Locking: one mutex guards the ring, the counters and the waiters. A
/// request holds it for the copy of one record into its slot (no
/// allocation once the ring has grown to its size: it grows as requests
/// come, so an idle namespace costs nothing); a read holds it while it
/// copies the records it answers with (their strings are references).
/// Waiters are answered after it is let go.
///
/// A waiting client costs its entry in `waiters` and its parked
/// connection: no thread. Its deadline answer (the empty page) is the
/// responder's (`answer(at:)`), and a client that leaves is removed by the
/// responder's cancel handler.
package final class RequestJournal: HTTPAnswerObserver {
    private struct Waiter {
        let filter: JournalFilter
        let responder: HTTPResponder
    }

    private struct State {
        var ring: [JournalRecord] = []
        /// Index in `ring` of the oldest record once it is full.
        var oldest = 0
        /// The seq of the last record made (0: none yet).
        var lastSeq: UInt64 = 0
        /// Records pushed out of the ring since it was last emptied.
        var dropped: UInt64 = 0
        var waiters: [Waiter] = []
        /// The namespace is gone: nothing more is recorded, and no one waits.
        var closed = false
    }

    let capacity: Int
    /// Where the numbers come from (the server's, shared by its journals).
    private let sequence: JournalSequence
    /// Bytes of a request's target before the path inside the namespace
    /// (`/ns/w1`; 0 in the default namespace).
    private let pathOffset: Int32
    /// The namespace's clock: an entry's time is by it.
    let clock: StoreClock
    private let state = Locked(State())

    /// `namespace`: the name of the namespace it records (nil: the default one).
    init(capacity: Int, sequence: JournalSequence, clock: StoreClock, namespace: String? = nil) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.sequence = sequence
        self.clock = clock
        pathOffset = namespace.map { Int32(NamespacePath.prefix.utf8.count + $0.utf8.count) } ?? 0
    }

    /// A request of the namespace was answered: recorded, or, for a
    /// reset of the namespace (`DELETE /store/`) that succeeded, the
    /// journal is emptied instead, so a test that resets first sees only
    /// its own requests.
    package func answered(_ request: borrowing HTTPAnsweredRequest, with response: borrowing HTTPResponse) {
        if request.method == .delete, (200..<300).contains(response.status.code), isReset(request.target) {
            clear()
        } else {
            var record = JournalRecord(request, response, pathOffset: pathOffset, nowNanos: clock.nowNanos())
            self.record(&record)
        }
    }

    /// Whether `target` is `/store/` or `/store` of this namespace (with
    /// any query): the whole store's prefix, whose DELETE is the reset.
    private func isReset(_ target: String) -> Bool {
        var inner = target.utf8.dropFirst(Int(pathOffset))
        let store = "/store".utf8
        guard inner.starts(with: store) else { return false }
        inner = inner.dropFirst(store.count)
        if inner.first == UInt8(ascii: "/") { inner = inner.dropFirst() }
        return inner.isEmpty || inner.first == UInt8(ascii: "?")
    }

    /// Adds a record (its `seq` is given here) and answers the waiters it
    /// is news for. Swapped into its slot, not copied: `record` comes back
    /// holding the one it replaced, let go after the lock.
    func record(_ record: inout JournalRecord) {
        let woken: [(HTTPResponder, Selection)] = state.withLock { st in
            guard !st.closed else { return [] }
            st.lastSeq = sequence.next()
            let slot: Int
            if st.ring.count < capacity {
                slot = st.ring.count
                // Grown by doubling, but never past its size.
                if slot == st.ring.capacity { st.ring.reserveCapacity(min(capacity, max(16, 2 * slot))) }
                st.ring.append(record)
            } else {
                slot = st.oldest
                swap(&st.ring[slot], &record)
                st.oldest = st.oldest + 1 == capacity ? 0 : st.oldest + 1
                st.dropped += 1
            }
            st.ring[slot].seq = st.lastSeq
            guard !st.waiters.isEmpty else { return [] }
            let record = st.ring[slot]
            var woken: [(HTTPResponder, Selection)] = []
            var waiting: [Waiter] = []
            for waiter in st.waiters {
                if waiter.filter.matches(record) {
                    woken.append((waiter.responder, Self.select(st, waiter.filter)))
                } else {
                    waiting.append(waiter)
                }
            }
            st.waiters = waiting
            return woken
        }
        for (responder, selection) in woken { responder.respond(selection.response) }
    }

    /// Empties the ring (`DELETE /journal`, a reset of the namespace); the
    /// sequence goes on, so a client's `since` stays meaningful.
    func clear() {
        state.withLock { st in
            st.ring = []
            st.oldest = 0
            st.dropped = 0
        }
    }

    /// The page for `filter` now.
    func page(_ filter: JournalFilter) -> JournalPage {
        state.withLock { st in Self.select(st, filter) }.page
    }

    /// Answers `filter` through `responder`: at once when there is an
    /// entry for it (or it does not wait), else when one is recorded or
    /// its wait is over (with the empty page).
    func answer(_ filter: JournalFilter, through responder: HTTPResponder) {
        var filter = filter
        // A number no entry has had yet is from an earlier run of the
        // server (numbers start again at a restart): start from the oldest.
        if filter.since > sequence.current { filter.since = 0 }
        let now: Selection? = state.withLock { st in
            let selection = Self.select(st, filter)
            guard selection.records.isEmpty, filter.waitSeconds > 0, !st.closed else { return selection }
            st.waiters.append(Waiter(filter: filter, responder: responder))
            return nil
        }
        if let now { return responder.respond(now.response) }
        responder.whenCancelled { [weak self] in self?.forget(responder) }
        let empty = state.withLock { st in
            Selection(records: [], next: max(filter.since, st.lastSeq), dropped: st.dropped, har: filter.har)
        }
        responder.answer(at: .now() + .seconds(filter.waitSeconds), with: empty.response)
    }

    /// Waiting requests now (tests, metrics).
    var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// Answers every waiter with what it has (an empty page): the
    /// namespace is going away.
    func close() {
        let waiters = state.withLock { st in
            st.closed = true
            defer { st.waiters = [] }
            return st.waiters.map { ($0.responder, Self.select(st, $0.filter)) }
        }
        for (responder, selection) in waiters { responder.respond(selection.response) }
    }

    private func forget(_ responder: HTTPResponder) {
        state.withLock { st in st.waiters.removeAll { $0.responder === responder } }
    }

    /// Records picked for a page, copied out under the lock (references
    /// and numbers); made into entries (the time formatted, the query
    /// redacted) after it is let go.
    private struct Selection {
        var records: [JournalRecord]
        let next: UInt64
        let dropped: UInt64
        /// Answered as an HTTP Archive.
        let har: Bool

        var page: JournalPage { JournalPage(requests: records.map(\.entry), next: next, dropped: dropped) }

        var response: HTTPResponse { har ? RequestJournal.response(JournalHAR(records)) : RequestJournal.response(page) }
    }

    /// The records after `filter.since` that match it, oldest first, up to
    /// its limit. `next`: the last seq looked at (the last one returned
    /// when the limit cut the page short, else the newest there is).
    private static func select(_ st: State, _ filter: JournalFilter) -> Selection {
        var records: [JournalRecord] = []
        var next = max(filter.since, st.lastSeq)
        let count = st.ring.count
        // Oldest first: the ring holds records in seq order from `oldest`.
        for i in 0..<count {
            let record = st.ring[(st.oldest + i) % count]
            guard filter.matches(record) else { continue }
            if records.count == filter.limit {
                next = records[records.count - 1].seq
                break
            }
            records.append(record)
        }
        return Selection(records: records, next: next, dropped: st.dropped, har: filter.har)
    }

    /// A page, or its HAR: the journal changes with every request.
    static func response(_ body: some Encodable) -> HTTPResponse {
        .json(.ok, body, headers: [("Cache-Control", "no-store")])
    }
}
