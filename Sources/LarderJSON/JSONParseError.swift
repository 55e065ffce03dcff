/// Why a JSON text was rejected, and where.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The category of a parse failure.
    public enum Kind: Sendable, Equatable, Hashable {
        /// The input ended before the value was complete (includes empty input).
        case unexpectedEndOfInput
        /// A byte that cannot start or continue the value at this point.
        case unexpectedByte
        /// A number that does not match the RFC 8259 grammar (e.g. `01`, `1.`, `-`).
        case invalidNumber
        /// A misspelled `true`, `false` or `null`.
        case invalidLiteral
        /// An unknown escape or malformed `\uXXXX` inside a string.
        case invalidEscape
        /// A `\uXXXX` surrogate escape without its matching half.
        case loneSurrogate
        /// A raw byte below 0x20 inside a string; RFC 8259 requires it escaped.
        case unescapedControlCharacter
        /// Bytes that are not well-formed UTF-8.
        case invalidUTF8
        /// The input starts with a UTF-8 byte order mark (RFC 8259 §8.1 forbids it).
        case byteOrderMark
        /// Something other than whitespace follows the value.
        case trailingData
        /// Arrays and objects nest deeper than the parser's `maxDepth`.
        case tooDeep
    }

    /// The category of the failure.
    public let kind: Kind
    /// The byte offset in the input where the problem was found.
    public let offset: Int
    /// A human-readable explanation that includes ``offset``.
    public let message: String

    /// True when the input nested deeper than the allowed depth, so callers can
    /// answer differently (for example 413/422) from plain syntax errors.
    public var isTooDeep: Bool { kind == .tooDeep }

    /// Same as ``message``.
    public var description: String { message }

    /// Creates an error; `detail` is completed with the offset.
    public init(_ kind: Kind, at offset: Int, _ detail: String) {
        self.kind = kind
        self.offset = offset
        self.message = "\(detail) at byte offset \(offset)"
    }
}
