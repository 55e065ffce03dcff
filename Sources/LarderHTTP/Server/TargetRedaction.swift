import LarderSupport

/// The request target as the access log prints it: the values of secret
/// query parameters are replaced, so a credential sent in the URL (RFC 6750
/// section 2.3's `access_token`, which a browser's `EventSource` has to use)
/// never reaches a log. Names are compared percent-decoded, as the
/// application reads them: `access%5Ftoken=` is caught too.
public enum TargetRedaction {
    /// Query parameters whose values are never logged.
    public static let secretParameters = ["access_token"]
    public static let placeholder = "REDACTED"

    /// `target` with every secret parameter's value replaced; the same
    /// string (no copy) when there is none.
    public static func redact(_ target: String) -> String {
        let bytes = Array(target.utf8)
        guard let question = bytes.firstIndex(of: UInt8(ascii: "?")) else { return target }
        var out = Array(bytes[...question])
        var changed = false
        var start = question + 1
        while start <= bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
            let pair = bytes[start..<end]
            if let equals = pair.firstIndex(of: UInt8(ascii: "=")), isSecret(bytes[start..<equals]) {
                out += bytes[start...equals]
                out += placeholder.utf8
                changed = true
            } else {
                out += pair
            }
            if end < bytes.count { out.append(UInt8(ascii: "&")) }
            start = end + 1
        }
        return changed ? String(decoding: out, as: UTF8.self) : target
    }

    private static func isSecret(_ name: ArraySlice<UInt8>) -> Bool {
        // nil for a malformed escape (such a name is no parameter the application accepts).
        guard let decoded = PercentDecoding.decode(name) else { return false }
        return secretParameters.contains { decoded.elementsEqual($0.utf8) }
    }
}
