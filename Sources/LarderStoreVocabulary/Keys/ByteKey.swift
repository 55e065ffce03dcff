/// Bytes as a dictionary key, hashed in one call over the whole buffer:
/// `[UInt8]`'s own `Hashable` feeds the hasher one byte at a time (tens of
/// instructions a byte, on every read-cache lookup).
package struct ByteKey: Hashable, Sendable {
    package let bytes: [UInt8]

    @inline(__always)
    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    package static func == (a: ByteKey, b: ByteKey) -> Bool { a.bytes == b.bytes }

    package func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
