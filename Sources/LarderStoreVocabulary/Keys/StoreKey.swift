import LarderModel
import LarderSupport
/// A validated key: one or more `/`-separated segments of UTF-8.
///
/// Rules (docs/http-api.md, Keys): no empty, `.` or `..` segment, no control bytes, no
/// backslash, segments of at most 255 bytes, keys of at most 1024 bytes,
/// valid UTF-8. Validation runs on the percent-decoded bytes, so `%2e%2e`
/// is caught like `..`.
public struct StoreKey: Hashable, Sendable, CustomStringConvertible {
    public static let maxKeyBytes = 1024
    public static let maxSegmentBytes = 255

    /// The key as text, segments joined by `/`.
    public let string: String
    /// The key's UTF-8 bytes.
    public let bytes: [UInt8]

    /// The `/`-separated segments (computed: a cached read never needs them).
    public var segments: [String] {
        bytes.split(separator: 0x2F, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    public var description: String { string }

    // Keys are equal when their bytes are: String's == would equate NFC
    // and NFD spellings of one text, which are different keys.
    public static func == (a: StoreKey, b: StoreKey) -> Bool { a.bytes == b.bytes }
    /// The bytes in one call (`ByteKey`: not one at a time).
    public func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }

    /// Validates an already percent-decoded key.
    public init(_ string: String) throws {
        try self.init(bytes: Array(string.utf8))
    }

    /// Validates raw key bytes (after percent-decoding).
    public init(bytes: [UInt8]) throws {
        if bytes.isEmpty { throw StoreError.invalidKey("the key is empty") }
        if bytes.count > Self.maxKeyBytes {
            throw StoreError.invalidKey("the key is \(bytes.count) bytes; at most \(Self.maxKeyBytes) are allowed")
        }
        try Self.validate(bytes)
        self.bytes = bytes
        self.string = String(decoding: bytes, as: UTF8.self)
    }

    /// Percent-decodes the path after `/store/` and validates it.
    public init(percentEncoded path: Substring) throws {
        try self.init(bytes: try Self.percentDecode(path))
    }

    /// A key (or prefix) as a URL path (`KeyPercentEncoding`, the one encoder).
    public static func percentEncode(_ key: String) -> String { KeyPercentEncoding.percentEncode(key) }
    public static func percentEncode(bytes: [UInt8]) -> String { KeyPercentEncoding.percentEncode(bytes: bytes) }

    /// Splits and checks segments; shared with `StorePrefix`.
    static func validatedSegments(_ bytes: [UInt8]) throws -> [String] {
        try validate(bytes)
        return bytes.split(separator: 0x2F, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Checks every key rule in one pass over the bytes, without building
    /// strings (every request with a key passes here).
    static func validate(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBufferPointer { b in
            // ASCII needs no UTF-8 check.
            if b.contains(where: { $0 >= 0x80 }), String(validating: b, as: UTF8.self) == nil {
                throw StoreError.invalidKey("the key is not valid UTF-8")
            }
            var start = 0
            for index in 0...b.count {
                if index == b.count || b[index] == 0x2F {
                    try checkSegment(UnsafeBufferPointer(rebasing: b[start..<index]))
                    start = index + 1
                    continue
                }
                let c = b[index]
                if c < 0x20 || c == 0x7F {
                    throw StoreError.invalidKey("the key contains the control byte 0x\(String(c, radix: 16))")
                }
                if c == 0x5C { throw StoreError.invalidKey("the key contains a backslash") }
                // C1 control characters U+0080...U+009F are encoded as C2 80...C2 9F.
                if c == 0xC2, index + 1 < b.count, b[index + 1] >= 0x80, b[index + 1] <= 0x9F {
                    throw StoreError.invalidKey("the key contains a control character")
                }
            }
        }
    }

    private static func checkSegment(_ segment: UnsafeBufferPointer<UInt8>) throws {
        switch segment.count {
        case 0: throw StoreError.invalidKey("the key has an empty segment")
        case 1 where segment[0] == 0x2E, 2 where segment[0] == 0x2E && segment[1] == 0x2E:
            throw StoreError.invalidKey("'.' and '..' are not allowed as key segments")
        case (maxSegmentBytes + 1)...:
            throw StoreError.invalidKey("a key segment is \(segment.count) bytes; at most \(maxSegmentBytes) are allowed")
        default: break
        }
    }

    /// `%XX` → byte. A `%` not followed by two hex digits is an invalid key.
    public static func percentDecode(_ text: Substring) throws -> [UInt8] {
        guard let bytes = PercentDecoding.decode(text) else {
            throw StoreError.invalidKey("a '%' in the key is not followed by two hex digits")
        }
        return bytes
    }
}

/// A listing or bulk-delete prefix: zero or more whole segments, written
/// with a trailing `/` (`users/archive/`), or empty for the whole store.
public struct StorePrefix: Hashable, Sendable, CustomStringConvertible {
    public let segments: [String]

    public static let root = StorePrefix(validated: [])

    init(validated segments: [String]) { self.segments = segments }

    /// `text` is the percent-decoded path after `/store/`, ending in `/` or empty.
    public init(bytes: [UInt8]) throws {
        var trimmed = bytes
        if trimmed.last == 0x2F { trimmed.removeLast() }
        if trimmed.isEmpty { self.segments = []; return }
        if trimmed.count + 1 > StoreKey.maxKeyBytes {
            throw StoreError.invalidKey("the prefix is longer than a key may be")
        }
        self.segments = try StoreKey.validatedSegments(trimmed)
    }

    /// The prefix as the API writes it: `a/b/`, or "" for the root.
    public var string: String { segments.isEmpty ? "" : segments.joined(separator: "/") + "/" }
    public var description: String { string }
}
