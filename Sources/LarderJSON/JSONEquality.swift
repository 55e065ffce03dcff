extension JSONValue: Equatable, Hashable {
    /// JSON equality.
    ///
    /// - Numbers are equal when numerically equal, compared exactly in decimal
    ///   (`1`, `1.0`, `1e0`, `10e-1` are equal; `-0` equals `0`; big integers
    ///   never round through Double).
    /// - Strings compare by UTF-8 bytes (RFC 8259 §8.3), not by Swift's
    ///   canonical equivalence.
    /// - Arrays compare element-wise; objects compare as sets of members,
    ///   regardless of order.
    /// - Different kinds are never equal (`true` != `1`, `"1"` != `1`).
    ///
    /// Iterative, so deep values cannot exhaust the stack.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        // Pairs still to compare; the result is their conjunction, so order
        // does not matter and the first mismatch ends the walk.
        var pending: [(JSONValue, JSONValue)] = []
        var a = lhs
        var b = rhs
        while true {
            switch (a, b) {
            case (.null, .null):
                break
            case let (.bool(x), .bool(y)):
                if x != y { return false }
            case let (.number(x), .number(y)):
                if !CanonicalNumber.textsEqual(x, y) { return false }
            case let (.string(x), .string(y)):
                if !ExactString.equal(x, y) { return false }
            case let (.array(x), .array(y)):
                guard x.count == y.count else { return false }
                for i in x.indices { pending.append((x[i], y[i])) }
            case let (.object(x), .object(y)):
                guard pairMembers(x, y, into: &pending) else { return false }
            default:
                return false
            }
            guard let next = pending.popLast() else { return true }
            (a, b) = next
        }
    }

    /// Matches the members of two objects by key, queueing value pairs;
    /// false if the key sets differ.
    private static func pairMembers(
        _ x: [(key: String, value: JSONValue)],
        _ y: [(key: String, value: JSONValue)],
        into pending: inout [(JSONValue, JSONValue)]
    ) -> Bool {
        let x = MemberTable.normalized(x)
        let y = MemberTable.normalized(y)
        guard x.count == y.count else { return false }
        // Common case: same keys in the same order.
        if x.indices.allSatisfy({ ExactString.equal(x[$0].key, y[$0].key) }) {
            for i in x.indices { pending.append((x[i].value, y[i].value)) }
            return true
        }
        var table = MemberTable(normalizing: y)
        for member in x {
            guard let j = table.find(member.key) else { return false }
            pending.append((member.value, table.value(at: j)))
        }
        return true
    }

    /// Hashes consistently with ``==(_:_:)``: numbers by canonical value,
    /// strings by bytes, objects independent of member order.
    ///
    /// Recursive; safe for the depths the parser accepts.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case .bool(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value)
        case .number(let text):
            hasher.combine(2 as UInt8)
            if let canonical = CanonicalNumber(text) {
                hasher.combine(true)
                hasher.combine(canonical)
            } else {
                // Invalid text only equals identical text.
                hasher.combine(false)
                ExactString.hash(text, into: &hasher)
            }
        case .string(let string):
            hasher.combine(3 as UInt8)
            ExactString.hash(string, into: &hasher)
        case .array(let elements):
            hasher.combine(4 as UInt8)
            hasher.combine(elements.count)
            for element in elements { element.hash(into: &hasher) }
        case .object(let members):
            hasher.combine(5 as UInt8)
            let members = MemberTable.normalized(members)
            hasher.combine(members.count)
            // Order-independent: sum of independently hashed members.
            var sum: UInt = 0
            for member in members {
                var memberHasher = Hasher()
                ExactString.hash(member.key, into: &memberHasher)
                member.value.hash(into: &memberHasher)
                sum &+= UInt(bitPattern: memberHasher.finalize())
            }
            hasher.combine(sum)
        }
    }
}
