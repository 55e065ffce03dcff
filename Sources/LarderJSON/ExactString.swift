/// A string compared and hashed by its UTF-8 bytes.
///
/// RFC 8259 §8.3 compares strings code unit by code unit, but Swift's `String`
/// equality uses canonical equivalence, which would treat the distinct JSON
/// keys `"é"` and `"e\u0301"` as duplicates. Everything in this module that
/// compares JSON strings or keys goes through this type.
struct ExactString: Hashable {
    var string: String

    init(_ string: String) {
        self.string = string
    }

    static func == (lhs: ExactString, rhs: ExactString) -> Bool {
        equal(lhs.string, rhs.string)
    }

    func hash(into hasher: inout Hasher) {
        Self.hash(string, into: &hasher)
    }

    /// Byte-wise equality of two strings.
    static func equal(_ a: String, _ b: String) -> Bool {
        let x = a.utf8
        let y = b.utf8
        guard x.count == y.count else { return false }
        let fast = x.withContiguousStorageIfAvailable { p in
            y.withContiguousStorageIfAvailable { q in p.elementsEqual(q) }
        }
        if let fast, let result = fast { return result }
        return x.elementsEqual(y)
    }

    /// Feeds the string's bytes (and length, so concatenations differ) to `hasher`.
    static func hash(_ string: String, into hasher: inout Hasher) {
        let bytes = string.utf8
        hasher.combine(bytes.count)
        let done: Void? = bytes.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if done == nil {
            Array(bytes).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
}
