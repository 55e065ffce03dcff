/// Versions as text: 16 lower-case hex digits, so they sort as numbers do.
/// ETags, change-feed ids and the disk store's file names all spell a
/// version this way.
package enum VersionHex {
    package static func hex(_ value: UInt64) -> String {
        let s = String(value, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }
}
