/// `%XX` → byte (RFC 3986 section 2.1), the one decoder: store keys and
/// prefixes, query parameters (the application's and the access log's
/// redaction), fault rules, libpq URI parts and SigV4's canonical paths and
/// S3's query. `+` stays `+`: RFC 3986 gives it no meaning (send `%20` for
/// a space). A `%` not followed by two hex digits (either case) makes the
/// whole text malformed (nil), unless the caller keeps such a `%` as it is
/// (`keepingMalformed: true`, as S3 takes a path literally rather than
/// refusing it); then the decode never fails.
public enum PercentDecoding {
    /// The bytes `text` spells, nil for a malformed escape unless `keepingMalformed`.
    public static func decode(_ text: Substring, keepingMalformed: Bool = false) -> [UInt8]? {
        // Most keys have no escapes: their bytes as they are, in one copy
        // (through the contiguous storage: the view's generic `contains`
        // and copy cost hundreds of instructions).
        let plain = text.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.contains(0x25) ? nil : Array(bytes)
        }
        if let plain, let bytes = plain { return bytes }
        return decoded(text.utf8, keepingMalformed: keepingMalformed)
    }

    /// The bytes `bytes` spell, nil for a malformed escape unless `keepingMalformed`.
    public static func decode(_ bytes: ArraySlice<UInt8>, keepingMalformed: Bool = false) -> [UInt8]? {
        decoded(bytes, keepingMalformed: keepingMalformed)
    }

    /// The text `text` spells; nil for a malformed escape or bytes that are
    /// not UTF-8 (as Foundation's `removingPercentEncoding`).
    public static func decodeString(_ text: Substring) -> String? {
        decode(text).flatMap { String(validating: $0, as: UTF8.self) }
    }

    @inline(__always)
    private static func decoded(_ bytes: some Collection<UInt8>, keepingMalformed: Bool) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == 0x25 {
                let h1 = bytes.index(after: i)
                if h1 < bytes.endIndex {
                    let h2 = bytes.index(after: h1)
                    if h2 < bytes.endIndex, let h = HexDigit.value(bytes[h1]), let l = HexDigit.value(bytes[h2]) {
                        out.append(h << 4 | l)
                        i = bytes.index(after: h2)
                        continue
                    }
                }
                guard keepingMalformed else { return nil }
            }
            out.append(b)
            i = bytes.index(after: i)
        }
        return out
    }
}
