/// How to answer a `Range` request for one representation.
public enum RangeOutcome: Sendable, Equatable {
    /// Ignore the `Range` header and send the whole representation (200).
    case full
    /// Send bytes `start...end` (inclusive) with 206 Partial Content.
    case partial(start: Int64, end: Int64)
    /// 416 Range Not Satisfiable, with ``ByteRangeRequest/unsatisfiedContentRange(length:)``.
    case unsatisfiable
}

/// Byte-range requests (RFC 9110 section 14): `Range`, `Content-Range` and
/// `If-Range`.
///
/// Larder serves single ranges only. Range support is optional in HTTP
/// (RFC 9110 section 14.2 lets a server ignore `Range`), so anything we do not
/// serve — another unit, several ranges, a malformed value — falls back to the
/// full representation rather than an error. The caller must only consult
/// `Range` for GET (RFC 9110 section 14.2: ignored for other methods).
public enum ByteRangeRequest {
    /// Evaluates a `Range` header value against a representation of `length`
    /// bytes.
    ///
    /// Grammar (RFC 9110 section 14.1): `bytes=first-last`, `bytes=first-` or
    /// `bytes=-suffix`, unit name case-insensitive, whitespace tolerated around
    /// the value, the `=` and list elements; empty list elements are ignored.
    ///
    /// - `.full` when the unit is not `bytes`, the value is malformed
    ///   (including `last < first`, which RFC 9110 makes the whole field
    ///   invalid), or it holds more than one range.
    /// - `.partial` for a satisfiable range: `last` is clamped to `length - 1`,
    ///   a suffix longer than the representation selects all of it.
    /// - `.unsatisfiable` when `first >= length`, for a zero-length suffix
    ///   (`bytes=-0`), and for any range on an empty representation, with one
    ///   exception: RFC 9110 section 14.1.1 counts a non-zero suffix on an
    ///   empty representation as satisfiable, but `Content-Range` cannot express
    ///   zero bytes, so that case ignores the range (`.full`, an empty 200)
    ///   rather than answering 416 to a satisfiable request.
    public static func evaluate(_ header: String, length: Int64) -> RangeOutcome {
        guard length >= 0, let spec = parseSingleSpec(header) else { return .full }
        switch spec {
        case .suffix(let n):
            if n == 0 { return .unsatisfiable }
            if length == 0 { return .full }
            return .partial(start: n >= length ? 0 : length - n, end: length - 1)
        case .from(let first, let last):
            if first >= length { return .unsatisfiable }  // also every range on length 0
            let end = last.map { min($0, length - 1) } ?? length - 1
            return .partial(start: first, end: end)
        }
    }

    /// The `Content-Range` value of a 206 response: `bytes 0-99/1000`.
    public static func contentRange(start: Int64, end: Int64, length: Int64) -> String {
        "bytes \(start)-\(end)/\(length)"
    }

    /// The `Content-Range` value of a 416 response: `bytes */1000`.
    public static func unsatisfiedContentRange(length: Int64) -> String {
        "bytes */\(length)"
    }

    /// Evaluates `If-Range` (RFC 9110 section 13.1.5): whether the `Range`
    /// header may be honoured. When false, send the full representation.
    ///
    /// - nil (no `If-Range`): true.
    /// - An entity tag: true iff it is strong and strong-matches one of
    ///   `currentETags` (a weak tag is never enough to splice partial content).
    /// - An HTTP-date: true iff it equals `lastModified` exactly. RFC 9110 only
    ///   lets a date count when `Last-Modified` is a strong validator; we accept
    ///   exact equality, so a date the client copied from our `Last-Modified`
    ///   works and any other date sends the full representation.
    /// - Anything else (malformed): false, the safe answer — a full 200 can
    ///   never corrupt a client's cached copy.
    ///
    /// The caller must ignore `If-Range` when the request has no `Range`.
    public static func ifRangeAllows(_ ifRange: String?, currentETags: [String], lastModified: Int64) -> Bool {
        guard let ifRange else { return true }
        // If-Range = entity-tag / HTTP-date; the two syntaxes cannot overlap
        // (a tag starts with `"` or `W/`, a date with a day name and a comma
        // or space), so try the tag first and fall back to the date.
        if let tag = EntityTag(ifRange) {
            guard !tag.isWeak else { return false }
            return currentETags.contains { EntityTag($0).map(tag.strongMatch) ?? false }
        }
        guard let date = HTTPDate.parse(ifRange) else { return false }
        return date == lastModified
    }

    // MARK: - Parsing

    private enum Spec {
        /// `first-[last]`
        case from(Int64, Int64?)
        /// `-n`
        case suffix(Int64)
    }

    /// Parses `unit=range-set`; nil unless it is a syntactically valid
    /// `bytes` range set holding exactly one range spec.
    private static func parseSingleSpec(_ header: String) -> Spec? {
        let bytes = Array(header.utf8)
        guard let eq = bytes.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        let unit = trimOWS(bytes[..<eq])
        // Unit names are case-insensitive tokens (RFC 9110 section 14.1).
        guard unit.count == 5,
              unit.map({ $0 | 0x20 }).elementsEqual("bytes".utf8) else { return nil }
        // range-set = 1#range-spec; no element contains a comma, so split.
        let elements = bytes[(eq + 1)...]
            .split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            .map(trimOWS)
            .filter { !$0.isEmpty }
        // Validate every element first: one invalid spec invalidates the field.
        var specs: [Spec] = []
        for element in elements {
            guard let spec = parseSpec(element) else { return nil }
            specs.append(spec)
        }
        return specs.count == 1 ? specs[0] : nil
    }

    /// `1*DIGIT "-" [1*DIGIT]` or `"-" 1*DIGIT`.
    private static func parseSpec(_ s: ArraySlice<UInt8>) -> Spec? {
        guard let dash = s.firstIndex(of: UInt8(ascii: "-")) else { return nil }
        let before = s[..<dash], after = s[(dash + 1)...]
        if before.isEmpty {
            guard let n = number(after) else { return nil }
            return .suffix(n)
        }
        guard let first = number(before) else { return nil }
        if after.isEmpty { return .from(first, nil) }
        guard let last = number(after), last >= first else { return nil }
        return .from(first, last)
    }

    /// A non-empty run of ASCII digits. Values beyond `Int64.max` saturate:
    /// they are still syntactically valid positions, just past any length.
    private static func number(_ s: ArraySlice<UInt8>) -> Int64? {
        guard !s.isEmpty else { return nil }
        var value: Int64 = 0
        for c in s {
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int64(c - UInt8(ascii: "0")))
            value = (o1 || o2) ? .max : sum
        }
        return value
    }

    private static func trimOWS(_ s: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var lo = s.startIndex, hi = s.endIndex
        while lo < hi, s[lo] == 0x20 || s[lo] == 0x09 { lo += 1 }
        while hi > lo, s[hi - 1] == 0x20 || s[hi - 1] == 0x09 { hi -= 1 }
        return s[lo..<hi]
    }
}
