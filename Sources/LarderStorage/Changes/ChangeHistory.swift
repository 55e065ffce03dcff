import LarderValueFile
/// The last few changes in arrival order, for "replay after event id":
/// a ring of fixed capacity. A value type with no lock of its own; its
/// owner (the server's change hub, the embedded change relay) guards it
/// with the lock that also orders live delivery, so replay and live
/// events neither overlap nor leave a gap.
public struct ChangeHistory: Sendable {
    /// One remembered change.
    public struct Entry: Sendable {
        /// Order of arrival, from 1; replay and live delivery never overlap by it.
        public let sequence: UInt64
        /// The change's version in hex, the feed's event id.
        public let id: String
        /// The change itself.
        public let change: StoreChange
    }

    /// How many changes are kept (at least 1).
    public let capacity: Int
    private var ring: [Entry] = []
    private var ringStart = 0
    /// The sequence of the latest change recorded (0: none yet).
    public private(set) var lastSequence: UInt64 = 0

    /// An empty history keeping the last `capacity` changes.
    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Remembers `change`, forgetting the oldest when full.
    public mutating func record(_ change: StoreChange) -> Entry {
        lastSequence += 1
        let entry = Entry(sequence: lastSequence, id: change.id, change: change)
        if ring.count < capacity {
            ring.append(entry)
        } else {
            ring[ringStart] = entry
            ringStart = (ringStart + 1) % capacity
        }
        return entry
    }

    /// Forgets every change (some after them were never recorded): a
    /// replay after any id recorded so far is then a reset.
    public mutating func forget() {
        ring = []
        ringStart = 0
    }

    /// For a reader resuming after `eventID`: the remembered changes after
    /// it that concern `prefix`, oldest first; nil when the history cannot
    /// say what came after it (the id fell out of the ring, or is from
    /// before this history began) and some change may be missing. An
    /// unknown id at or past the newest remembered one misses nothing.
    /// Event ids are versions in hex, compared as numbers.
    public func replay(after eventID: String, concerning prefix: String) -> [Entry]? {
        let ordered = Array(ring[ringStart...] + ring[..<ringStart])
        if let found = ordered.lastIndex(where: { $0.id == eventID }) {
            return ordered[(found + 1)...].filter { $0.change.concerns(prefix: prefix) }
        }
        if let newest = ordered.last, let asked = UInt64(eventID, radix: 16), let known = UInt64(newest.id, radix: 16),
           asked >= known { return [] }
        return nil
    }

    /// The id of the newest remembered change.
    public var newestID: String? { ring.isEmpty ? nil : ring[(ringStart + ring.count - 1) % ring.count].id }
}
