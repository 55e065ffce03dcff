import CLibPQ
import CLibPQLoader
import FoundationEssentials
import LarderSupport

/// A `--store` value as libpq reads it: a `postgres://` / `postgresql://`
/// URI (several hosts included: `postgres://h1:5432,h2:5432/db`) or
/// `keyword=value` settings, with Larder's own `schema` taken out and TCP
/// keepalives added unless set. libpq itself checks what is left
/// (`PQconninfoParse`), so every form it accepts is accepted.
struct ConnectionSettings {
    /// What libpq connects with: the value in its own form, without `schema`.
    let conninfo: String
    /// The `schema` setting, if given.
    let schema: String?

    /// Keepalives unless the value sets them: a listener on a network that
    /// silently drops the connection finds out within a minute.
    static let keepalives = [("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3")]

    static func isURI(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// - Throws: `PostgresStoreError.libpqMissing` when libpq does not
    ///   load (the first use of it); `.invalidURL` with libpq's reason.
    init(_ text: String) throws {
        var loadError: UnsafePointer<CChar>?
        guard larder_libpq_load(&loadError) == 0 else {
            throw PostgresStoreError.libpqMissing(loadError.map { String(cString: $0) } ?? "libpq did not load")
        }
        var settings: any SettingsText = Self.isURI(text) ? URISettings(text) : KeywordSettings(text)
        schema = settings.remove("schema")
        for (name, value) in Self.keepalives where !settings.has(name) { settings.add(name, value) }
        conninfo = settings.text
        var error: UnsafeMutablePointer<CChar>?
        guard let parsed = PQconninfoParse(conninfo, &error) else {
            let reason = error.map { String(cString: $0).trimmingTrailingNewlines } ?? "out of memory"
            if let error { PQfreemem(error) }
            throw PostgresStoreError.invalidURL("libpq cannot use it: \(reason)")
        }
        PQconninfoFree(parsed)
    }
}

/// Settings in a form that can lose and gain one setting as text.
private protocol SettingsText {
    var text: String { get }
    func has(_ name: String) -> Bool
    /// Takes the setting out and returns its value.
    mutating func remove(_ name: String) -> String?
    mutating func add(_ name: String, _ value: String)
}

/// A URI's query parameters (`?a=1&b=2`), percent-decoded for names and
/// values read, the rest of the URI as written.
private struct URISettings: SettingsText {
    private let base: String
    private var items: [Substring]

    init(_ uri: String) {
        if let mark = uri.firstIndex(of: "?") {
            base = String(uri[..<mark])
            items = uri[uri.index(after: mark)...].split(separator: "&")
        } else {
            base = uri
            items = []
        }
    }

    var text: String { items.isEmpty ? base : base + "?" + items.joined(separator: "&") }

    private static func name(_ item: Substring) -> String {
        let raw = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
        return PercentDecoding.decodeString(raw) ?? String(raw)
    }

    func has(_ name: String) -> Bool { items.contains { Self.name($0) == name } }

    mutating func remove(_ name: String) -> String? {
        guard let index = items.lastIndex(where: { Self.name($0) == name }) else { return nil }
        let parts = items[index].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let value = parts.count > 1 ? String(parts[1]) : ""
        items.removeAll { Self.name($0) == name }
        return PercentDecoding.decodeString(value[...]) ?? value
    }

    mutating func add(_ name: String, _ value: String) { items.append(Substring("\(name)=\(value)")) }
}

/// `keyword = value` settings separated by whitespace, a value in single
/// quotes when it holds spaces (backslash escapes `'` and `\`), as libpq
/// reads them.
private struct KeywordSettings: SettingsText {
    private var pairs: [(name: String, text: String, value: String)] = []
    /// A value that does not tokenize is left for libpq to refuse.
    private var unparsed: String?

    init(_ text: String) {
        var rest = Substring(text)
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "\n" }
            guard !rest.isEmpty else { return }
            let start = rest.startIndex
            guard let equals = rest.firstIndex(of: "=") else { unparsed = String(rest); return }
            let name = rest[..<equals].trimmingWhitespace()
            rest = rest[rest.index(after: equals)...].drop { $0 == " " || $0 == "\t" }
            var value = ""
            if rest.first == "'" {
                rest = rest.dropFirst()
                var closed = false
                while let c = rest.first {
                    rest = rest.dropFirst()
                    if c == "\\", let next = rest.first { value.append(next); rest = rest.dropFirst() }
                    else if c == "'" { closed = true; break }
                    else { value.append(c) }
                }
                if !closed { unparsed = String(text[start...]); return }
            } else {
                let end = rest.firstIndex { $0 == " " || $0 == "\t" || $0 == "\n" } ?? rest.endIndex
                value = String(rest[..<end])
                rest = rest[end...]
            }
            pairs.append((name, String(text[start..<rest.startIndex]), value))
        }
    }

    var text: String { (pairs.map(\.text) + (unparsed.map { [$0] } ?? [])).joined(separator: " ") }

    func has(_ name: String) -> Bool { pairs.contains { $0.name == name } }

    mutating func remove(_ name: String) -> String? {
        let value = pairs.last { $0.name == name }?.value
        pairs.removeAll { $0.name == name }
        return value
    }

    mutating func add(_ name: String, _ value: String) { pairs.append((name, "\(name)=\(value)", value)) }
}

private extension String {
    var trimmingTrailingNewlines: String {
        var text = self
        while text.last == "\n" { text.removeLast() }
        return text
    }
}
