/// A JSON `Encoder` that writes object members in the order `encode(to:)`
/// encodes them, on one line, `/` unescaped. Foundation's `JSONEncoder` on
/// Linux orders members by hash (or sorts them); answers read by people
/// (`curl`, the change feed's `data:` lines, snapshots) should show `key`
/// first, as API.md does. Integers and strings are exact; a `Double` is
/// written as Swift prints it (shortest round-trip form).
public struct OrderedJSONEncoder: Sendable {
    public init() {}

    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let root = Node.Box()
        try value.encode(to: NodeEncoder(box: root, codingPath: []))
        var out: [UInt8] = []
        out.reserveCapacity(256)
        root.node.write(to: &out)
        return out
    }
}

// MARK: - The tree built while encoding

private indirect enum Node {
    case object([(String, Box)])
    case array([Box])
    case literal(String)  // a number, true, false or null, as written
    case string(String)
    case empty            // nothing encoded (yet)

    final class Box {
        var node: Node = .empty
    }

    func write(to out: inout [UInt8]) {
        switch self {
        case .empty, .literal("null"): out += [0x6E, 0x75, 0x6C, 0x6C]
        case .literal(let text): out += Array(text.utf8)
        case .string(let s): Node.writeString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.node.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (name, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Node.writeString(name, to: &out)
                out.append(UInt8(ascii: ":"))
                value.node.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string literal (RFC 8259 section 7): `"` and `\` escaped,
    /// control characters as short escapes or `\u00XX`, and U+2028/U+2029
    /// escaped too so the text is safe inside JavaScript.
    static func writeString(_ s: String, to out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += [0x5C, 0x22]
            case "\\": out += [0x5C, 0x5C]
            case "\n": out += [0x5C, UInt8(ascii: "n")]
            case "\r": out += [0x5C, UInt8(ascii: "r")]
            case "\t": out += [0x5C, UInt8(ascii: "t")]
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                let v = Int(scalar.value)
                out += [0x5C, UInt8(ascii: "u"), hex[v >> 12], hex[(v >> 8) & 15], hex[(v >> 4) & 15], hex[v & 15]]
            default:
                out += Array(String(scalar).utf8)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

// MARK: - Encoder and containers

private struct NodeEncoder: Encoder {
    let box: Node.Box
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = box.node {} else { box.node = .object([]) }
        return KeyedEncodingContainer(KeyedContainer<Key>(box: box, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = box.node {} else { box.node = .array([]) }
        return UnkeyedContainer(box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleContainer(box: box, codingPath: codingPath)
    }
}

/// Encodes one value into `box`: primitives directly, anything else through
/// its own `encode(to:)`.
private func encodeValue<T: Encodable>(_ value: T, into box: Node.Box, codingPath: [any CodingKey]) throws {
    switch value {
    case let s as String: box.node = .string(s)
    case let b as Bool: box.node = .literal(b ? "true" : "false")
    case let i as Int: box.node = .literal(String(i))
    case let i as Int64: box.node = .literal(String(i))
    case let i as UInt64: box.node = .literal(String(i))
    case let i as Int32: box.node = .literal(String(i))
    case let i as UInt32: box.node = .literal(String(i))
    case let i as UInt: box.node = .literal(String(i))
    case let d as Double:
        guard d.isFinite else {
            throw EncodingError.invalidValue(d, .init(codingPath: codingPath, debugDescription: "JSON has no \(d)"))
        }
        box.node = .literal(d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : "\(d)")
    default: try value.encode(to: NodeEncoder(box: box, codingPath: codingPath))
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: Node.Box
    let codingPath: [any CodingKey]

    private func member(_ key: Key) -> Node.Box {
        guard case .object(var members) = box.node else { preconditionFailure("keyed container over a non-object") }
        if let existing = members.first(where: { $0.0 == key.stringValue }) { return existing.1 }
        let child = Node.Box()
        members.append((key.stringValue, child))
        box.node = .object(members)
        return child
    }

    mutating func encodeNil(forKey key: Key) throws { member(key).node = .literal("null") }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try encodeValue(value, into: member(key), codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                        forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(box: member(key), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        NodeEncoder(box: member(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { NodeEncoder(box: box, codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { NodeEncoder(box: member(key), codingPath: codingPath + [key]) }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let box: Node.Box
    let codingPath: [any CodingKey]

    var count: Int {
        if case .array(let items) = box.node { return items.count }
        return 0
    }

    private func next() -> Node.Box {
        guard case .array(var items) = box.node else { preconditionFailure("unkeyed container over a non-array") }
        let child = Node.Box()
        items.append(child)
        box.node = .array(items)
        return child
    }

    mutating func encodeNil() throws { next().node = .literal("null") }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try encodeValue(value, into: next(), codingPath: codingPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(box: next(), codingPath: codingPath).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        NodeEncoder(box: next(), codingPath: codingPath).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { NodeEncoder(box: next(), codingPath: codingPath) }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let box: Node.Box
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { box.node = .literal("null") }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try encodeValue(value, into: box, codingPath: codingPath)
    }
}
