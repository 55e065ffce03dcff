/// An entity tag (RFC 9110 section 8.8.3): an opaque validator, optionally
/// marked weak with `W/`.
///
/// ```
/// entity-tag = [ weak ] opaque-tag
/// weak       = %s"W/"
/// opaque-tag = DQUOTE *etagc DQUOTE
/// etagc      = %x21 / %x23-7E / obs-text
/// ```
///
/// Equality and matching compare the opaque tag byte for byte: entity tags are
/// opaque octets, so Swift's Unicode-canonical `String` equality would be the
/// wrong comparison.
public struct EntityTag: Sendable, Equatable, CustomStringConvertible {
    /// The opaque tag including its double quotes and without `W/`, e.g. `"abc"`
    /// (with the quotes).
    public let opaque: String
    /// Whether the tag was marked weak (`W/"abc"`).
    public let isWeak: Bool

    /// Creates a tag from an already quoted opaque tag; no validation is done.
    public init(opaque: String, isWeak: Bool = false) {
        self.opaque = opaque
        self.isWeak = isWeak
    }

    /// Parses a single entity tag such as `"abc"` or `W/"abc"`, ignoring
    /// surrounding whitespace. Returns nil if `text` is anything else.
    public init?(_ text: String) {
        var scanner = EntityTagScanner(Array(text.utf8))
        scanner.skipOWS()
        guard let tag = scanner.entityTag() else { return nil }
        scanner.skipOWS()
        guard scanner.atEnd else { return nil }
        self = tag
    }

    /// The field-value form: `"abc"` or `W/"abc"`.
    public var description: String { isWeak ? "W/" + opaque : opaque }

    /// Strong comparison (RFC 9110 section 8.8.3.2): both tags are strong and
    /// their opaque tags are identical. Used by `If-Match` and `If-Range`,
    /// where a weak validator must never stand in for byte-identical content.
    public func strongMatch(_ other: EntityTag) -> Bool {
        !isWeak && !other.isWeak && opaque.utf8.elementsEqual(other.opaque.utf8)
    }

    /// Weak comparison (RFC 9110 section 8.8.3.2): the opaque tags are
    /// identical, whether or not either is marked weak. Used by
    /// `If-None-Match`, where "equivalent enough" is the question.
    public func weakMatch(_ other: EntityTag) -> Bool {
        opaque.utf8.elementsEqual(other.opaque.utf8)
    }

    public static func == (lhs: EntityTag, rhs: EntityTag) -> Bool {
        lhs.isWeak == rhs.isWeak && lhs.opaque.utf8.elementsEqual(rhs.opaque.utf8)
    }
}

/// The value of an `If-Match` or `If-None-Match` header field: either `*` or a
/// list of entity tags (RFC 9110 sections 13.1.1 and 13.1.2).
public enum EntityTagCondition: Sendable, Equatable {
    /// `*`: any current representation.
    case any
    /// A list of entity tags; may be empty (`If-Match:` with an empty value is
    /// syntactically a valid, empty list, which matches nothing).
    case tags([EntityTag])

    /// Parses every field line's value of one `If-Match` or `If-None-Match`
    /// header (the field may be repeated; the lines combine into one list, as
    /// RFC 9110 section 5.3 describes).
    ///
    /// Accepted syntax is `"*" / #entity-tag`: comma-separated entity tags with
    /// optional whitespace, where empty list elements (`"a", , "b"`) are
    /// ignored as RFC 9110 section 5.6.1 requires. `*` must be the only
    /// non-empty element across all lines.
    ///
    /// - Parameter headerValues: the field values, one per field line. Pass an
    ///   empty array only if you want the empty list: absence of the header is
    ///   the caller's business (``HTTPPreconditions`` checks it first).
    /// - Returns: nil when the list is syntactically invalid (an unquoted tag,
    ///   lowercase `w/`, a tag with a space or `"` inside, `*` mixed with tags,
    ///   missing commas, ...). RFC 9110 lets a recipient treat an invalid field
    ///   as it sees fit; this parser does not decide, the evaluator does: see
    ///   ``HTTPPreconditions`` (invalid `If-Match` fails, invalid
    ///   `If-None-Match` is ignored).
    public static func parse(_ headerValues: [String]) -> EntityTagCondition? {
        var tags: [EntityTag] = []
        var stars = 0
        for value in headerValues {
            var scanner = EntityTagScanner(Array(value.utf8))
            // #element = [ element ] *( OWS "," OWS [ element ] )
            while true {
                scanner.skipOWS()
                if scanner.atEnd { break }
                if scanner.peek == UInt8(ascii: ",") {
                    scanner.advance()  // empty element
                    continue
                }
                if scanner.peek == UInt8(ascii: "*") {
                    scanner.advance()
                    stars += 1
                } else if let tag = scanner.entityTag() {
                    tags.append(tag)
                } else {
                    return nil
                }
                scanner.skipOWS()
                if scanner.atEnd { break }
                // After an element only a comma may follow.
                guard scanner.peek == UInt8(ascii: ",") else { return nil }
                scanner.advance()
            }
        }
        if stars > 0 {
            return stars == 1 && tags.isEmpty ? .any : nil
        }
        return .tags(tags)
    }

    /// Whether this condition holds for a representation answering to
    /// `currentTags` (nil: there is no current representation). `*` matches
    /// any existing representation; a list matches if any listed tag matches
    /// any current tag under the given comparison.
    func matches(_ currentTags: [EntityTag]?, strong: Bool) -> Bool {
        guard let currentTags else { return false }
        switch self {
        case .any:
            return true
        case .tags(let listed):
            return listed.contains { tag in
                currentTags.contains { strong ? tag.strongMatch($0) : tag.weakMatch($0) }
            }
        }
    }
}

/// A byte cursor over one field value, shared by the entity-tag parsers.
struct EntityTagScanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index >= bytes.count }
    var peek: UInt8? { atEnd ? nil : bytes[index] }
    mutating func advance() { index += 1 }

    mutating func skipOWS() {
        while let c = peek, c == 0x20 || c == 0x09 { index += 1 }
    }

    /// Consumes `[W/] DQUOTE *etagc DQUOTE`; on failure returns nil (the
    /// cursor position is then meaningless, callers give up).
    mutating func entityTag() -> EntityTag? {
        var weak = false
        if peek == UInt8(ascii: "W") {
            // `W/` is case-sensitive (%s"W/"), so `w/"x"` is invalid.
            guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "/") else { return nil }
            weak = true
            index += 2
        }
        guard peek == UInt8(ascii: "\"") else { return nil }
        let start = index
        index += 1
        while let c = peek, c != UInt8(ascii: "\"") {
            // etagc = %x21 / %x23-7E / obs-text(%x80-FF): no controls, SP or DEL.
            guard c == 0x21 || (c >= 0x23 && c != 0x7F) else { return nil }
            index += 1
        }
        guard peek == UInt8(ascii: "\"") else { return nil }  // unterminated
        index += 1
        return EntityTag(opaque: String(decoding: bytes[start..<index], as: UTF8.self), isWeak: weak)
    }
}
