import LarderJSON

/// Parses test JSON written as a Swift string.
func json(_ text: String) throws -> JSONValue {
    try JSONValue.parse(Array(text.utf8))
}

/// Compact serialization as a String, for readable expectations.
func compact(_ value: JSONValue) -> String {
    String(decoding: value.serialized(), as: UTF8.self)
}

/// The parse error for `bytes`, or nil if they parsed.
func parseError(_ bytes: [UInt8], maxDepth: Int = 512) -> JSONParseError? {
    do {
        _ = try JSONValue.parse(bytes, maxDepth: maxDepth)
        return nil
    } catch {
        return error
    }
}
