/// One-dimensional arrays as query parameters, in PostgreSQL's binary
/// array format (`array_recv`), for a statement that takes a batch of rows
/// as one array per column and `unnest`s them: one statement text for any
/// number of rows, so it is prepared once per connection, and no parameter
/// count limit (65,535) to mind. The statement must cast each parameter to
/// the array type whose element type is encoded here (`$1::text[]`,
/// `$2::int8[]`, `$3::bytea[]`): the server checks the element type's OID
/// against the cast's. Sent as `PGValue.bytes` (binary format).
enum PGArray {
    /// Element type OIDs (`pg_type.oid`, fixed since PostgreSQL 7).
    private static let textOID: UInt32 = 25
    private static let int8OID: UInt32 = 20
    private static let byteaOID: UInt32 = 17

    /// A `text[]`: each string's UTF-8 bytes (text's binary form).
    static func text(_ values: [String?]) -> PGValue {
        encode(values.map { $0.map { Array($0.utf8) } }, element: textOID)
    }

    /// An `int8[]`: each integer as 8 big-endian bytes.
    static func int8(_ values: [Int64?]) -> PGValue {
        encode(values.map { value in
            value.map { v in (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * (7 - $0))) } }
        }, element: int8OID)
    }

    /// A `bytea[]`: the bytes as they are.
    static func bytea(_ values: [[UInt8]?]) -> PGValue {
        encode(values, element: byteaOID)
    }

    /// The header (dimensions, whether any element is NULL, the element
    /// type, then the length and lower bound of the one dimension), then
    /// each element as its length (-1: NULL) and its bytes; big-endian.
    /// An empty array has no dimension.
    private static func encode(_ elements: [[UInt8]?], element oid: UInt32) -> PGValue {
        var out: [UInt8] = []
        out.reserveCapacity(20 + elements.reduce(0) { $0 + 4 + ($1?.count ?? 0) })
        func int32(_ v: Int32) { withUnsafeBytes(of: v.bigEndian) { out.append(contentsOf: $0) } }
        int32(elements.isEmpty ? 0 : 1)
        int32(elements.contains { $0 == nil } ? 1 : 0)
        int32(Int32(bitPattern: oid))
        if !elements.isEmpty {
            int32(Int32(elements.count))
            int32(1)
        }
        for element in elements {
            guard let element else {
                int32(-1)
                continue
            }
            int32(Int32(element.count))
            out.append(contentsOf: element)
        }
        return .bytes(out)
    }
}
