import LarderValueFile
extension StoreListing {
    /// One page of two layers' listings of the same prefix, each taken with
    /// the same `after` and `limit`: the union in byte order, the upper
    /// layer's value winning where both hold a key, a common prefix once.
    ///
    /// Each input holds its layer's first `limit` items after the cursor, so
    /// the first `limit` items of the union are exactly the merged page; there
    /// is a next page when items were left over or either layer had one.
    package static func merging(_ upper: StoreListing, over lower: StoreListing, limit: Int) -> StoreListing {
        let a = upper.items, b = lower.items
        var merged: [Item] = []
        merged.reserveCapacity(min(limit, a.count + b.count))
        var i = 0, j = 0
        var leftOver = false
        while i < a.count || j < b.count {
            let next: Item
            if j == b.count || (i < a.count && a[i].sortKey.lexicographicallyPrecedes(b[j].sortKey)) {
                next = a[i]; i += 1
            } else if i == a.count || b[j].sortKey.lexicographicallyPrecedes(a[i].sortKey) {
                next = b[j]; j += 1
            } else {
                next = a[i]; i += 1; j += 1  // the same key or prefix in both
            }
            if merged.count == limit { leftOver = true; break }
            merged.append(next)
        }
        var page = StoreListing()
        for item in merged {
            switch item.entry {
            case .value(let v): page.values.append(v)
            case .prefix(let p): page.prefixes.append(p)
            }
        }
        if leftOver || upper.next != nil || lower.next != nil, let last = merged.last {
            page.next = String(decoding: last.sortKey, as: UTF8.self)
        }
        return page
    }

    private struct Item {
        enum Entry { case value(ListedValue), prefix(String) }
        let sortKey: [UInt8]
        let entry: Entry
    }

    /// Values and prefixes in one sequence in byte order (a prefix sorts as
    /// its text, `a/`, like the directory lister walks it).
    private var items: [Item] {
        var result: [Item] = []
        result.reserveCapacity(values.count + prefixes.count)
        var p = 0
        for value in values {
            let key = Array(value.key.utf8)
            while p < prefixes.count, Array(prefixes[p].utf8).lexicographicallyPrecedes(key) {
                result.append(Item(sortKey: Array(prefixes[p].utf8), entry: .prefix(prefixes[p]))); p += 1
            }
            result.append(Item(sortKey: key, entry: .value(value)))
        }
        while p < prefixes.count {
            result.append(Item(sortKey: Array(prefixes[p].utf8), entry: .prefix(prefixes[p]))); p += 1
        }
        return result
    }
}
