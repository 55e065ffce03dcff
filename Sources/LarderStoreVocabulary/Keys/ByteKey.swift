/// Bytes as a dictionary key, hashed in one call over the whole buffer:
/// `[UInt8]`'s own `Hashable` feeds the hasher one byte at a time (tens of
/// instructions a byte, on every read-cache lookup). Public and inlinable:
/// the read cache (`ValueCache`, another module) compares keys on every
/// lookup, and only a public body is optimized across modules.
public struct ByteKey: Hashable, Sendable {
    public let bytes: [UInt8]

    @inlinable @inline(__always)
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    @inlinable
    public static func == (a: ByteKey, b: ByteKey) -> Bool {
        a.bytes == b.bytes
    }

    @inlinable
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
