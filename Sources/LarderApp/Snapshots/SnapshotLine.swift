import LarderModel
import LarderHTTP
import LarderRouting
import LarderJSON
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// One line of a snapshot (`application/x-ndjson`): a key, its metadata and
/// its value, the value member last so that a reader can stream it:
///
///     {"key":"a/b","contentType":"…","expires":"2026-11-22T10:00:00.000Z" or null,
///      "modified":"…","etag":"\"…\"", ["attributes":"<base64>",] <value member>}
///
/// `attributes`, present only for a value that has them, carries what
/// another face keeps with it (`ValueMetadata.attributes`: the S3 face's
/// MD5 ETag, checksum and headers), so a restore gives them back.
///
/// The value member is exactly one of
/// - `"json": <the stored bytes>`: a JSON-typed value of at most 1 MiB that
///   parses, has no CR or LF and no leading or trailing whitespace, copied
///   verbatim (so it comes back byte for byte, spacing and number text included);
/// - `"text": "<JSON string>"`: other valid UTF-8 of at most 1 MiB, when
///   escaping it costs no more than base64 would;
/// - `"base64": "<standard, padded>"`: anything else, of any size.
///
/// `modified` and `etag` are for people reading the file; a restore gives
/// each value a new version, as any write does. Readers ignore members they
/// do not know.
enum SnapshotLine {
    /// Values up to this size are read whole and may be written inline as
    /// JSON or text; larger ones are always streamed as base64.
    static let maxInlineValue = 1 << 20

    enum ValueMember: String, CaseIterable {
        case json, text, base64
    }

    // MARK: - Writing

    /// The line up to its value member: the metadata object, its closing
    /// brace turned into the comma the value member follows.
    static func header(_ meta: ValueMetadata) -> [UInt8] {
        var line = ModelJSON.encode(MetadataMembers(meta))
        line[line.count - 1] = UInt8(ascii: ",")
        return line
    }

    /// The members before the value (times to the millisecond).
    private struct MetadataMembers: Encodable {
        let key: String
        let contentType: String
        let expires: String?
        let modified: String
        let etag: String
        let attributes: String?

        init(_ meta: ValueMetadata) {
            key = meta.key
            contentType = meta.contentType
            expires = meta.expiresNanos.map { ISO8601.format(nanos: $0, milliseconds: true) }
            modified = ISO8601.format(nanos: meta.modifiedNanos, milliseconds: true)
            etag = meta.etag
            attributes = meta.attributes.map { String(decoding: Base64.encode($0), as: UTF8.self) }
        }

        enum CodingKeys: String, CodingKey { case key, contentType, expires, modified, etag, attributes }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(key, forKey: .key)
            try c.encode(contentType, forKey: .contentType)
            if let expires { try c.encode(expires, forKey: .expires) } else { try c.encodeNil(forKey: .expires) }
            try c.encode(modified, forKey: .modified)
            try c.encode(etag, forKey: .etag)
            try c.encodeIfPresent(attributes, forKey: .attributes)
        }
    }

    /// The start of a streamed base64 member; `base64End` closes the line.
    static let base64Start = Array("\"base64\":\"".utf8)
    static let base64End = Array("\"}\n".utf8)

    /// The value member of a value held whole (at most `maxInlineValue`)
    /// and the end of the line.
    static func valueMember(_ value: [UInt8], contentType: String) -> [UInt8] {
        if isJSONType(contentType), isVerbatimJSON(value) {
            return Array("\"json\":".utf8) + value + Array("}\n".utf8)
        }
        if let text = String(validating: value, as: UTF8.self) {
            let quoted = JSONValue.string(text).serialized()
            // Mostly control bytes: base64 is shorter and no less exact.
            if quoted.count <= Base64.encodedCount(value.count) + 2 {
                return Array("\"text\":".utf8) + quoted + Array("}\n".utf8)
            }
        }
        return base64Start + Base64.encode(value) + base64End
    }

    /// `application/json` and any `+json` type, parameters ignored.
    static func isJSONType(_ contentType: String) -> Bool {
        let type = contentType.split(separator: ";", maxSplits: 1).first?.trimmingSpaces.lowercased() ?? ""
        return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
    }

    /// Whether the bytes can sit in the line as they are and be read back
    /// identically: one JSON value, nothing around it, no line break in it.
    static func isVerbatimJSON(_ value: [UInt8]) -> Bool {
        guard let first = value.first, let last = value.last,
              !isWhitespace(first), !isWhitespace(last),
              !value.contains(0x0A), !value.contains(0x0D) else { return false }
        return (try? JSONValue.parse(value)) != nil
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    // MARK: - Reading

    /// What a line says about its value, from its members (any order).
    struct Header {
        let key: StoreKey
        let contentType: String
        let expiresNanos: Int64?
        /// What another face keeps with the value (`ValueMetadata.attributes`).
        let attributes: [UInt8]?
        /// The value member, the range of its raw value in the line and the
        /// value parsed; nil when the value is still to come (`valueFollows`:
        /// a long line, whose value member is streamed).
        let value: (member: ValueMember, range: Range<Int>, parsed: JSONValue)?

        /// Reads the members found by `JSONObjectScanner` in `line`. Every
        /// member's value is parsed (strict JSON), unknown ones too.
        init(_ members: [JSONObjectScanner.Member], in line: UnsafeRawBufferPointer, prefix: StorePrefix,
             valueFollows: Bool) throws(SnapshotLineError) {
            var seen: Set<String> = []
            var key: String?
            var contentType: String?
            var expires: Int64?
            var attributes: [UInt8]?
            var value: (member: ValueMember, range: Range<Int>, parsed: JSONValue)?
            for member in members {
                guard seen.insert(member.name).inserted else {
                    throw SnapshotLineError("the member \"\(member.name)\" appears twice")
                }
                let parsed: JSONValue
                do {
                    parsed = try JSONValue.parse(UnsafeRawBufferPointer(rebasing: line[member.value]))
                } catch {
                    throw SnapshotLineError("the value of \"\(member.name)\" is not JSON: \(error.message)")
                }
                switch (member.name, parsed) {
                case ("key", .string(let s)): key = s
                case ("contentType", .string(let s)): contentType = s
                case ("expires", .null): expires = nil
                case ("expires", .string(let s)):
                    guard let nanos = ISO8601.parse(s) else {
                        throw SnapshotLineError("\"expires\" is not an ISO 8601 date-time: \(s)")
                    }
                    expires = nanos
                case ("attributes", .string(let s)):
                    let decoded = Array(s.utf8).withUnsafeBytes { try? Base64.decode($0) }
                    guard let decoded, decoded.count <= ValueMetadata.maxAttributeBytes else {
                        throw SnapshotLineError("\"attributes\" must be base64 of at most \(ValueMetadata.maxAttributeBytes) bytes")
                    }
                    attributes = decoded
                case ("key", _), ("contentType", _), ("expires", _), ("attributes", _):
                    throw SnapshotLineError("\"\(member.name)\" must be a string" + (member.name == "expires" ? " or null" : ""))
                default:
                    guard let kind = ValueMember(rawValue: member.name) else { continue }  // modified, etag, unknown
                    if kind != .json {
                        guard case .string = parsed else { throw SnapshotLineError("\"\(kind.rawValue)\" must be a string") }
                    }
                    if let value {
                        throw SnapshotLineError("the line has both \"\(value.member.rawValue)\" and \"\(kind.rawValue)\"; one value member is allowed")
                    }
                    value = (kind, member.value, parsed)
                }
            }
            guard let key else {
                throw SnapshotLineError(valueFollows
                    ? "the line has no \"key\" before its value; in a line over \(SnapshotRestore.maxBufferedLine) bytes the value member must come last"
                    : "the line has no \"key\"")
            }
            if valueFollows, let value {
                throw SnapshotLineError("the line has both \"\(value.member.rawValue)\" and a value member at its end; one value member is allowed")
            }
            guard valueFollows || value != nil else {
                throw SnapshotLineError("the line has no value member (\"json\", \"text\" or \"base64\")")
            }
            do {
                self.key = try StoreKey(key)
            } catch let error as StoreError {
                throw SnapshotLineError("\(error)")
            } catch {
                throw SnapshotLineError("the key is invalid")
            }
            guard self.key.bytes.starts(with: Array(prefix.string.utf8)) else {
                throw SnapshotLineError("the key \(JSON.quote(key)) is not under the prefix \(JSON.quote(prefix.string))")
            }
            self.contentType = contentType ?? "application/octet-stream"
            self.expiresNanos = expires
            self.attributes = attributes
            self.value = value
        }
    }
}

/// Why a snapshot line cannot be restored; the restore adds the line number.
struct SnapshotLineError: Error {
    let message: String
    /// The value is over the size limit (413 rather than 400).
    var tooLarge = false
    init(_ message: String, tooLarge: Bool = false) {
        self.message = message
        self.tooLarge = tooLarge
    }
}
