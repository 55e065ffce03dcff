/// A JSON value as defined by RFC 8259.
///
/// Numbers keep their exact source text so stored values round-trip without
/// precision loss, and objects keep member order because clients notice when a
/// server reorders their documents.
///
/// Equality (``==(_:_:)``) is JSON equality, not structural identity: numbers
/// compare by numeric value, objects ignore member order, strings compare by
/// Unicode scalars (code unit by code unit, RFC 8259 §8.3).
public enum JSONValue: Sendable {
    /// The literal `null`.
    case null
    /// The literals `true` and `false`.
    case bool(Bool)
    /// A number, stored as its exact RFC 8259 source text (for example `"1.50"`,
    /// `"-0"`, `"1e400"`, `"123456789012345678901234567890"`).
    ///
    /// The text must match the RFC 8259 number grammar. The parser guarantees
    /// this; check hand-built text with ``isValidNumber(_:)``. Serialization
    /// writes the text verbatim.
    case number(String)
    /// A string, with escapes already decoded.
    case string(String)
    /// An array of values in order.
    case array([JSONValue])
    /// An object's members in document order.
    ///
    /// Keys are expected to be unique. The parser keeps them so: a later
    /// duplicate member replaces the earlier member's value in place (the
    /// member keeps the first position and takes the last value). Equality,
    /// hashing and merge patch read hand-built objects with duplicate keys the
    /// same way; serialization writes members exactly as given.
    case object([(key: String, value: JSONValue)])
}
