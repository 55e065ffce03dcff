/// Header fields of a request, kept as ranges into the bytes of the request
/// head: no String is built for a header nobody asks about.
public struct HTTPHeaders: Sendable, Sequence {
    let bytes: [UInt8]
    let fields: [(name: Range<Int>, value: Range<Int>)]

    init(bytes: [UInt8], fields: [(name: Range<Int>, value: Range<Int>)]) {
        self.bytes = bytes
        self.fields = fields
    }

    /// The fields of `head`, a request head the parser took (its bytes as
    /// `HTTPAnsweredRequest.head` keeps them: the request line, then field
    /// lines, each ending in CRLF), found again by the parser's own field
    /// rule; a line that rule refuses (none, for a head it took) is left out.
    public init(head: [UInt8]) {
        var fields: [(name: Range<Int>, value: Range<Int>)] = []
        head.withUnsafeBytes { raw in
            guard var start = raw.firstIndex(of: 0x0A).map({ $0 + 1 }) else { return }
            while start < raw.count, let newline = raw[start...].firstIndex(of: 0x0A) {
                let end = newline > start && raw[newline - 1] == 0x0D ? newline - 1 : newline
                if end > start, let field = try? HTTPFieldLine.parse(raw, from: start, to: end) { fields.append(field) }
                start = newline + 1
            }
        }
        self.init(bytes: head, fields: fields)
    }

    public var count: Int { fields.count }

    /// The first value of the field `name` (case-insensitive).
    public subscript(name: String) -> String? {
        for field in fields where matches(field.name, name) {
            return String(decoding: bytes[field.value], as: UTF8.self)
        }
        return nil
    }

    /// The first value of the field `name` as bytes, without building a
    /// String (a credential is compared as it came).
    public func valueBytes(_ name: String) -> ArraySlice<UInt8>? {
        for field in fields where matches(field.name, name) { return bytes[field.value] }
        return nil
    }

    /// Every value of the field `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { matches($0.name, name) }.map { String(decoding: bytes[$0.value], as: UTF8.self) }
    }

    /// Whether any field name starts with `prefix` (ASCII, case-insensitive):
    /// one pass to learn that a request has no `If-…` fields at all.
    public func containsName(startingWith prefix: StaticString) -> Bool {
        let (p, n) = (prefix.utf8Start, prefix.utf8CodeUnitCount)
        return bytes.withUnsafeBufferPointer { bytes in
            search: for field in fields where field.name.count >= n {
                for k in 0..<n where asciiLower(bytes[field.name.lowerBound + k]) != asciiLower(p[k]) { continue search }
                return true
            }
            return false
        }
    }

    public func contains(_ name: String) -> Bool {
        fields.contains { matches($0.name, name) }
    }

    private func matches(_ range: Range<Int>, _ name: String) -> Bool {
        guard range.count == name.utf8.count else { return false }
        var i = range.lowerBound
        for c in name.utf8 {
            if asciiLower(bytes[i]) != asciiLower(c) { return false }
            i += 1
        }
        return true
    }

    public func makeIterator() -> AnyIterator<(name: String, value: String)> {
        var index = 0
        return AnyIterator {
            guard index < fields.count else { return nil }
            defer { index += 1 }
            let f = fields[index]
            return (String(decoding: bytes[f.name], as: UTF8.self), String(decoding: bytes[f.value], as: UTF8.self))
        }
    }
}

@inline(__always)
func asciiLower(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c | 0x20 : c }
