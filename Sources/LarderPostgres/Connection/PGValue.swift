import CLibPQ
import FoundationEssentials

/// A query parameter. Text goes in PostgreSQL's text format, bytes in
/// binary (a `bytea` without escaping); the server infers each type from
/// the statement.
enum PGValue: Sendable {
    case text(String)
    case int(Int64)
    case bytes([UInt8])
    case null

    /// Runs `body` with the C arrays `PQsendQueryParams` takes, valid for
    /// the call only.
    static func withParameters<T>(_ parameters: [PGValue],
                                  _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> T) -> T {
        var storage: [[UInt8]?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        for parameter in parameters {
            switch parameter {
            case .text(let s):
                storage.append(Array(s.utf8) + [0]); lengths.append(0); formats.append(0)
            case .int(let i):
                storage.append(Array(String(i).utf8) + [0]); lengths.append(0); formats.append(0)
            case .bytes(let b):
                // A non-nil pointer even for an empty value (nil means NULL).
                storage.append(b.isEmpty ? [0] : b); lengths.append(Int32(b.count)); formats.append(1)
            case .null:
                storage.append(nil); lengths.append(0); formats.append(0)
            }
        }
        return withPointers(storage, index: 0, collected: []) { pointers in
            pointers.withUnsafeBufferPointer { values in
                lengths.withUnsafeBufferPointer { l in
                    formats.withUnsafeBufferPointer { f in
                        body(values.baseAddress, l.baseAddress, f.baseAddress)
                    }
                }
            }
        }
    }

    /// Pins each buffer for the duration of `body` (recursion keeps every
    /// `withUnsafeBufferPointer` scope open at once).
    private static func withPointers<T>(_ storage: [[UInt8]?], index: Int, collected: [UnsafePointer<CChar>?],
                                        _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        guard index < storage.count else { return body(collected) }
        guard let bytes = storage[index] else {
            return withPointers(storage, index: index + 1, collected: collected + [nil], body)
        }
        return bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { pointer in
                withPointers(storage, index: index + 1, collected: collected + [pointer], body)
            }
        }
    }
}

/// One row of a binary-format result: each column as its raw bytes.
struct PGRow: Sendable {
    var columns: [[UInt8]?]

    init(columns: [[UInt8]?]) { self.columns = columns }

    /// Row `row` of a libpq result, copied out (the result is cleared after).
    init(result: OpaquePointer, row: Int32) {
        let n = PQnfields(result)
        columns = (0..<n).map { column in
            if PQgetisnull(result, row, column) == 1 { return nil }
            let length = Int(PQgetlength(result, row, column))
            guard length > 0, let raw = PQgetvalue(result, row, column) else { return [] }
            return raw.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
        }
    }

    func isNull(_ i: Int) -> Bool { columns[i] == nil }

    /// A binary `int8`, `int4` or `int2` column (big-endian on the wire).
    func int(_ i: Int) -> Int64? {
        guard let bytes = columns[i] else { return nil }
        var v: Int64 = 0
        for b in bytes { v = (v << 8) | Int64(b) }
        // Sign-extend the narrower integer types.
        let bits = bytes.count * 8
        if bits > 0 && bits < 64 && bytes[0] & 0x80 != 0 { v -= Int64(1) << Int64(bits) }
        return v
    }

    func string(_ i: Int) -> String? { columns[i].map { String(decoding: $0, as: UTF8.self) } }
    func bytes(_ i: Int) -> [UInt8]? { columns[i] }
    func bool(_ i: Int) -> Bool? { columns[i].map { $0.first == 1 } }
}

/// What a statement returned: its rows (unless streamed) and how many rows
/// it touched.
struct PGResult: Sendable {
    var rows: [PGRow] = []
    var affected: Int = 0

    mutating func append(_ result: OpaquePointer, keepRows: Bool) {
        if let raw = PQcmdTuples(result), let n = Int(String(cString: raw)) { affected += n }
        guard keepRows else { return }
        for r in 0..<PQntuples(result) { rows.append(PGRow(result: result, row: r)) }
    }

    var first: PGRow? { rows.first }
}

/// A failure talking to PostgreSQL.
enum PGError: Error, CustomStringConvertible {
    /// The connection is gone or never came up: the database is down,
    /// restarting, or unreachable.
    case connection(String)
    /// The database refused the statement: SQLSTATE and message.
    case server(state: String, message: String)

    static func server(_ result: OpaquePointer) -> PGError {
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? "XX000"
        let message = PQresultErrorMessage(result).map { String(cString: $0) } ?? "unknown error"
        return .server(state: state, message: message.trimmingWhitespaceAndNewlines())
    }

    /// Whether the statement failed because the database is going away
    /// (class 08 connection exceptions, 57P0x shutdown and crash): to the
    /// client the database is unavailable, not wrong.
    var isUnavailable: Bool {
        switch self {
        case .connection: return true
        case .server(let state, _):
            return state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03" || state == "53300"
        }
    }

    var description: String {
        switch self {
        case .connection(let why): return why
        case .server(let state, let message): return "\(message) (SQLSTATE \(state))"
        }
    }
}
