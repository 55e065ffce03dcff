import FoundationEssentials
import LarderJSON
import LarderModel

/// A browser upload's policy (S3's POST policy): the base64 JSON document
/// the form carries, signed by its owner, saying until when it may be used
/// and what the form's fields must hold:
///
///     {"expiration": "2026-12-01T12:00:00Z",
///      "conditions": [{"bucket": "b"}, ["starts-with", "$key", "uploads/"],
///                     ["eq", "$acl", "private"], ["content-length-range", 0, 1048576]]}
///
/// As on S3: `expiration` and `conditions` are spelled so (any other case
/// is a malformed document, 400); operators and field names are
/// case-insensitive, values are not; an unmet condition or an expired
/// policy is 403.
struct PostPolicy {
    enum Condition: Equatable {
        /// `{"field": "value"}`, `["eq", "$field", "value"]`.
        case equals(field: String, value: String)
        /// `["starts-with", "$field", "prefix"]` (an empty prefix: any value).
        case startsWith(field: String, prefix: String)
        /// `["content-length-range", min, max]`: the file's size, in bytes.
        case contentLength(ClosedRange<Int64>)
    }

    /// Unix seconds after which the policy is refused.
    let expiresSeconds: Int64
    let conditions: [Condition]

    /// The file's allowed sizes, if the policy names them.
    var contentLengthRange: ClosedRange<Int64>? {
        for case .contentLength(let range) in conditions { return range }
        return nil
    }

    /// The policy field's value (base64 of the JSON document).
    init(base64 text: String) throws(S3Error) {
        guard let data = Data(base64Encoded: text.trimmingWhitespaceAndNewlines()),
              let document = try? JSONValue.parse([UInt8](data)), case .object(let members) = document else {
            throw Self.malformed("Invalid Policy: Invalid JSON.")
        }
        guard case .string(let expiration)? = Self.member("expiration", of: members) else {
            throw Self.malformed("Invalid Policy: Policy missing expiration.")
        }
        guard let nanos = ISO8601.parse(expiration) else {
            throw Self.malformed("Invalid Policy: Invalid 'expiration' value: '\(expiration)'")
        }
        guard case .array(let list)? = Self.member("conditions", of: members) else {
            throw Self.malformed("Invalid Policy: Policy missing conditions.")
        }
        expiresSeconds = nanos / 1_000_000_000
        conditions = try list.map { (entry: JSONValue) throws(S3Error) -> Condition in try Self.condition(entry) }
    }

    private static func member(_ name: String, of members: [(key: String, value: JSONValue)]) -> JSONValue? {
        members.first { $0.key == name }?.value
    }

    private static func condition(_ entry: JSONValue) throws(S3Error) -> Condition {
        if case .object(let object) = entry {
            guard object.count == 1, case .string(let text) = object[0].value else {
                throw malformed("Invalid Policy: Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.")
            }
            return .equals(field: object[0].key.lowercased(), value: text)
        }
        guard case .array(let array) = entry, case .string(let name)? = array.first else {
            throw malformed("Invalid Policy: Invalid condition: a condition is an object or an array.")
        }
        switch name.lowercased() {
        case "eq", "starts-with":
            guard array.count == 3, case .string(let field) = array[1], field.hasPrefix("$"), case .string(let value) = array[2] else {
                throw malformed("Invalid Policy: Invalid '\(name)' condition: [\"\(name)\", \"$field\", \"value\"] expected.")
            }
            let lowered = String(field.dropFirst()).lowercased()
            return name.lowercased() == "eq" ? .equals(field: lowered, value: value) : .startsWith(field: lowered, prefix: value)
        case "content-length-range":
            guard array.count == 3, let low = integer(array[1]), let high = integer(array[2]), low >= 0, low <= high else {
                throw malformed("Invalid Policy: Invalid content-length-range: two sizes from low to high expected.")
            }
            return .contentLength(low...high)
        default:
            throw malformed("Invalid Policy: Invalid condition: unknown operation '\(name)'.")
        }
    }

    /// A size as a number (`1048576`, `1e6`) or a string of digits, as S3 takes it.
    private static func integer(_ value: JSONValue) -> Int64? {
        switch value {
        case .string(let text): return Int64(text)
        case .number(let text): return Int64(text) ?? Double(text).flatMap { Int64(exactly: $0) }
        default: return nil
        }
    }

    /// 403 unless the policy is in date and every condition holds of the
    /// form's fields (names lower-cased) for an upload to `bucket`; and
    /// unless each field the policy must cover (all but those S3 exempts)
    /// has a condition.
    func check(fields: [String: String], bucket: String, nowSeconds: Int64) throws(S3Error) {
        guard nowSeconds <= expiresSeconds else { throw Self.refused("Invalid according to Policy: Policy expired.") }
        var values = fields
        values["bucket"] = bucket
        var covered: Set<String> = []
        for condition in conditions {
            switch condition {
            case .equals(let field, let value):
                covered.insert(field)
                guard values[field] ?? "" == value else {
                    throw Self.refused("Invalid according to Policy: Policy Condition failed: [\"eq\", \"$\(field)\", \"\(value)\"]")
                }
            case .startsWith(let field, let prefix):
                covered.insert(field)
                // A field the form leaves out is empty: `["starts-with", "$f", ""]` allows it.
                guard Self.starts(values[field] ?? "", with: prefix, field: field) else {
                    throw Self.refused("Invalid according to Policy: Policy Condition failed: [\"starts-with\", \"$\(field)\", \"\(prefix)\"]")
                }
            case .contentLength:
                break
            }
        }
        // S3 refuses a policy that does not name its bucket.
        guard covered.contains("bucket") else {
            throw Self.refused("Invalid according to Policy: Policy Condition failed: [\"eq\", \"$bucket\", \"\(bucket)\"]")
        }
        for field in fields.keys.sorted() where !covered.contains(field) && !Self.exempt(field) {
            throw Self.refused("Invalid according to Policy: Extra input fields: \(field)")
        }
    }

    /// A Content-Type may be a comma-separated list, each of which must start so.
    private static func starts(_ value: String, with prefix: String, field: String) -> Bool {
        guard field == "content-type", value.contains(",") else { return value.hasPrefix(prefix) }
        return value.split(separator: ",").allSatisfy { $0.trimmingWhitespace().hasPrefix(prefix) }
    }

    /// The fields a policy need not name: the signature's own, the file,
    /// `x-ignore-*` (as S3), and the checksums (the bytes are checked
    /// against them).
    static func exempt(_ field: String) -> Bool {
        ["policy", "signature", "awsaccesskeyid", "x-amz-signature", "file", "bucket"].contains(field)
            || field.hasPrefix("x-ignore-") || field.hasPrefix("x-amz-checksum-")
    }

    private static func malformed(_ message: String) -> S3Error { S3Error(.badRequest, "InvalidPolicyDocument", message) }
    private static func refused(_ message: String) -> S3Error { .accessDenied(message) }
}
