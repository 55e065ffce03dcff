/// A JSON `Encoder` that writes object members in the order `encode(to:)`
/// encodes them, on one line, `/` unescaped. Foundation's `JSONEncoder` on
/// Linux orders members by hash (or sorts them); answers read by people
/// (`curl`, the change feed's `data:` lines, snapshots) should show `key`
/// first, as docs/http-api.md does. Integers and strings are exact; a `Double` is
/// written as Swift prints it (shortest round-trip form), a whole one
/// without `.0`; NaN and infinities throw, as JSON has none.
public struct OrderedJSONEncoder: Sendable {
    public init() {}

    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let root = Node()
        try encodeValue(value, into: root, codingPath: [])
        var out: [UInt8] = []
        out.reserveCapacity(256)
        root.write(to: &out)
        return out
    }
}

// MARK: - The tree built while encoding

/// One JSON value being built. A class, so containers append to it in place
/// (encoding stays linear in the output).
private final class Node {
    enum Kind {
        case empty             // nothing encoded (yet): written as null
        case literal(String)   // a number, true, false or null, as written
        case string(String)
        case object
        case array
    }

    var kind: Kind = .empty
    /// Members in the order first encoded (objects), and where each name is.
    var members: [(String, Node)] = []
    var memberIndex: [String: Int] = [:]
    /// Elements (arrays).
    var items: [Node] = []

    func becomeObject() {
        if case .object = kind { return }
        kind = .object
        members = []
        memberIndex = [:]
    }

    func becomeArray() {
        if case .array = kind { return }
        kind = .array
        items = []
    }

    /// The member `name`, added at the end the first time it is asked for.
    func member(_ name: String) -> Node {
        if let i = memberIndex[name] { return members[i].1 }
        let child = Node()
        memberIndex[name] = members.count
        members.append((name, child))
        return child
    }

    func appendItem() -> Node {
        let child = Node()
        items.append(child)
        return child
    }

    func write(to out: inout [UInt8]) {
        switch kind {
        case .empty: out += Array("null".utf8)
        case .literal(let text): out += Array(text.utf8)
        case .string(let s): Node.writeString(s, to: &out)
        case .array:
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object:
            out.append(UInt8(ascii: "{"))
            for (i, (name, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Node.writeString(name, to: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
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
    let node: Node
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.becomeObject()
        return KeyedEncodingContainer(KeyedContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.becomeArray()
        return UnkeyedContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleContainer(node: node, codingPath: codingPath)
    }
}

/// The key Foundation nests a superclass's members under.
private struct SuperKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) { nil }
    init?(intValue: Int) { nil }
}

/// Encodes one value into `node`: the primitives JSON has directly (every
/// fixed-width integer, `Float` and `Double`, `Bool`, `String`), anything
/// else through its own `encode(to:)`.
private func encodeValue<T: Encodable>(_ value: T, into node: Node, codingPath: [any CodingKey]) throws {
    func finite<F: BinaryFloatingPoint & LosslessStringConvertible>(_ f: F) throws -> String {
        guard f.isFinite else {
            throw EncodingError.invalidValue(f, .init(codingPath: codingPath, debugDescription: "JSON has no \(f)"))
        }
        // Whole numbers without ".0", as JSON writers commonly do.
        if f == f.rounded(), abs(f) < 1e15 { return String(Int64(f)) }
        return String(f)
    }
    switch value {
    case let s as String: node.kind = .string(s)
    case let b as Bool: node.kind = .literal(b ? "true" : "false")
    case let i as Int: node.kind = .literal(String(i))
    case let i as Int8: node.kind = .literal(String(i))
    case let i as Int16: node.kind = .literal(String(i))
    case let i as Int32: node.kind = .literal(String(i))
    case let i as Int64: node.kind = .literal(String(i))
    case let i as UInt: node.kind = .literal(String(i))
    case let i as UInt8: node.kind = .literal(String(i))
    case let i as UInt16: node.kind = .literal(String(i))
    case let i as UInt32: node.kind = .literal(String(i))
    case let i as UInt64: node.kind = .literal(String(i))
    case let d as Double: node.kind = .literal(try finite(d))
    case let f as Float: node.kind = .literal(try finite(f))
    default: try value.encode(to: NodeEncoder(node: node, codingPath: codingPath))
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { node.member(key.stringValue).kind = .literal("null") }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try encodeValue(value, into: node.member(key.stringValue), codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                        forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }

    /// As Foundation does: the superclass's members nest under `"super"`.
    mutating func superEncoder() -> any Encoder {
        NodeEncoder(node: node.member("super"), codingPath: codingPath + [SuperKey()])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]

    var count: Int { node.items.count }

    mutating func encodeNil() throws { node.appendItem().kind = .literal("null") }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try encodeValue(value, into: node.appendItem(), codingPath: codingPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: node.appendItem(), codingPath: codingPath).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        NodeEncoder(node: node.appendItem(), codingPath: codingPath).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.appendItem(), codingPath: codingPath) }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.kind = .literal("null") }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try encodeValue(value, into: node, codingPath: codingPath)
    }
}
