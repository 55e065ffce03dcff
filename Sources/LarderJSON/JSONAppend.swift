extension JSONValue {
    /// Appends `body` to a stored value, the way the server's atomic JSON
    /// append works.
    ///
    /// The stored value is first read as a list:
    /// - `current == nil` (the key is absent): the empty list;
    /// - `current` is an array: its elements;
    /// - `current` is any other value `v`: the one-element list `[v]`.
    ///
    /// Then `body` is added: if `body` is an array, each of its elements is
    /// appended in order; otherwise `body` itself is appended. So an absent key
    /// becomes `[body]` (or the body array), and a scalar becomes
    /// `[v, body...]`.
    ///
    /// With `unique`, an element being added is skipped when an equal element
    /// (JSON equality, see ``==(_:_:)``) is already in the list, including one
    /// added earlier from the same `body`. Duplicates already stored are left
    /// alone.
    ///
    /// - Returns: The resulting array and its element count.
    public static func appending(
        _ body: JSONValue, to current: JSONValue?, unique: Bool
    ) -> (result: JSONValue, count: Int) {
        var elements: [JSONValue]
        switch current {
        case nil: elements = []
        case .array(let stored)?: elements = stored
        case let stored?: elements = [stored]
        }
        let additions: [JSONValue]
        if case .array(let bodyElements) = body {
            additions = bodyElements
        } else {
            additions = [body]
        }

        if !unique {
            elements.append(contentsOf: additions)
        } else if additions.count <= 4 {
            // A few additions: linear scans beat hashing the whole stored list.
            elements.reserveCapacity(elements.count + additions.count)
            for addition in additions where !elements.contains(addition) {
                elements.append(addition)
            }
        } else {
            var seen = Set(elements)
            for addition in additions where seen.insert(addition).inserted {
                elements.append(addition)
            }
        }
        return (.array(elements), elements.count)
    }
}
