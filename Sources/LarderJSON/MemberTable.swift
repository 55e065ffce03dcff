/// Object members being built or edited under JSON's duplicate-key rule:
/// setting an existing key replaces its value in place (first position, last
/// value). Used by the parser and by merge patch.
///
/// Small objects are searched linearly (fast and allocation-free); a key index
/// is built lazily once an object grows past ``linearLimit`` members so large
/// objects stay linear-time overall.
struct MemberTable {
    typealias Member = (key: String, value: JSONValue)

    private static let linearLimit = 12

    private var members: [Member]
    private var index: [ExactString: Int]?
    /// Liveness per member, allocated on the first removal; nil means all live.
    private var live: [Bool]?

    init() {
        members = []
    }

    /// Starts from existing members, collapsing duplicate keys first.
    init(normalizing existing: [Member]) {
        members = Self.normalized(existing)
    }

    /// Position of the live member named `key`.
    mutating func find(_ key: String) -> Int? {
        if index == nil && members.count > Self.linearLimit {
            buildIndex()
        }
        if let index {
            return index[ExactString(key)]
        }
        for i in members.indices where ExactString.equal(members[i].key, key) && isLive(i) {
            return i
        }
        return nil
    }

    /// Sets `key` to `value`: in place if present, else at the end.
    mutating func set(_ key: String, _ value: JSONValue) {
        if let i = find(key) {
            members[i].value = value
        } else {
            append(key, value)
        }
    }

    /// Adds a member; the caller guarantees `key` is not already live.
    mutating func append(_ key: String, _ value: JSONValue) {
        index?[ExactString(key)] = members.count
        live?.append(true)
        members.append((key: key, value: value))
    }

    func value(at i: Int) -> JSONValue {
        members[i].value
    }

    mutating func replaceValue(at i: Int, with value: JSONValue) {
        members[i].value = value
    }

    /// Removes the member at `i` without shifting the others (positions stay
    /// valid for the index); ``finish()`` drops it.
    mutating func remove(at i: Int) {
        if live == nil {
            live = Array(repeating: true, count: members.count)
        }
        live![i] = false
        index?[ExactString(members[i].key)] = nil
        members[i].value = .null  // release the subtree now
    }

    /// The live members in order.
    consuming func finish() -> [Member] {
        guard let live else { return members }
        var result: [Member] = []
        result.reserveCapacity(members.count)
        for i in members.indices where live[i] {
            result.append(members[i])
        }
        return result
    }

    private func isLive(_ i: Int) -> Bool {
        live?[i] ?? true
    }

    private mutating func buildIndex() {
        var built = [ExactString: Int](minimumCapacity: members.count * 2)
        for i in members.indices where isLive(i) {
            built[ExactString(members[i].key)] = i
        }
        index = built
    }

    /// `members` with duplicate keys collapsed by the parser's rule; returned
    /// unchanged (no copy) in the normal case of unique keys.
    static func normalized(_ members: [Member]) -> [Member] {
        guard hasDuplicateKeys(members) else { return members }
        var table = MemberTable()
        for member in members {
            table.set(member.key, member.value)
        }
        return table.finish()
    }

    private static func hasDuplicateKeys(_ members: [Member]) -> Bool {
        if members.count < 2 { return false }
        if members.count <= linearLimit {
            for i in members.indices {
                for j in (i + 1)..<members.count where ExactString.equal(members[i].key, members[j].key) {
                    return true
                }
            }
            return false
        }
        var seen = Set<ExactString>(minimumCapacity: members.count)
        for member in members where !seen.insert(ExactString(member.key)).inserted {
            return true
        }
        return false
    }
}
