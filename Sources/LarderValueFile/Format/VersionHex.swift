/// Versions as text: 16 lower-case hex digits, so they sort as numbers do.
/// ETags, change-feed ids and the disk store's file names all spell a
/// version this way. Written straight into the string's storage: an ETag
/// is formatted on every write and every uncached read.
package enum VersionHex {
    package static func hex(_ value: UInt64) -> String {
        format(value, before: "", after: "")
    }

    /// `before`, the 16 digits of `value`, `after`, in one allocation.
    package static func format(_ value: UInt64, before: StaticString, after: StaticString) -> String {
        let (head, tail) = (before.utf8CodeUnitCount, after.utf8CodeUnitCount)
        return String(unsafeUninitializedCapacity: head + 16 + tail) { buffer in
            let base = buffer.baseAddress!
            base.update(from: before.utf8Start, count: head)
            var v = value
            for i in stride(from: head + 15, through: head, by: -1) {
                let nibble = UInt8(truncatingIfNeeded: v & 0xF)
                base[i] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
                v >>= 4
            }
            (base + head + 16).update(from: after.utf8Start, count: tail)
            return head + 16 + tail
        }
    }
}
