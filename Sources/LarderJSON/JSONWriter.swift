extension JSONValue {
    /// Compact UTF-8 JSON text for this value (no insignificant whitespace).
    ///
    /// Numbers are written as their stored text. Strings escape only what JSON
    /// requires — `"`, `\` and control characters (as `\n`, `\r`, `\t`, `\b`,
    /// `\f` or `\u00XX`) — plus U+2028 and U+2029, which break JavaScript
    /// consumers when raw. Everything else is written as UTF-8. Object members
    /// are written in order, exactly as stored.
    ///
    /// Iterative, so nesting depth is limited only by memory.
    public func serialized() -> [UInt8] {
        var writer = JSONWriter()
        writer.write(self)
        return writer.output
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text of the value.
    public var description: String {
        String(decoding: serialized(), as: UTF8.self)
    }
}

/// Writes JSON text using an explicit stack of partly written containers
/// instead of recursion.
struct JSONWriter {
    private(set) var output: [UInt8] = []

    private enum Frame {
        case array([JSONValue], next: Int)
        case object([(key: String, value: JSONValue)], next: Int)
    }

    private var stack: [Frame] = []

    init() {
        output.reserveCapacity(256)
    }

    mutating func write(_ root: JSONValue) {
        var value = root
        nextValue: while true {
            switch value {
            case .array(let elements) where !elements.isEmpty:
                output.append(UInt8(ascii: "["))
                stack.append(.array(elements, next: 1))
                value = elements[0]
                continue nextValue
            case .object(let members) where !members.isEmpty:
                output.append(UInt8(ascii: "{"))
                writeMemberName(members[0].key)
                stack.append(.object(members, next: 1))
                value = members[0].value
                continue nextValue
            default:
                writeLeaf(value)
            }

            // `value` is written: continue with its next sibling, closing every
            // container that has none.
            while let frame = stack.popLast() {
                switch frame {
                case .array(let elements, let next):
                    if next < elements.count {
                        output.append(UInt8(ascii: ","))
                        stack.append(.array(elements, next: next + 1))
                        value = elements[next]
                        continue nextValue
                    }
                    output.append(UInt8(ascii: "]"))
                case .object(let members, let next):
                    if next < members.count {
                        output.append(UInt8(ascii: ","))
                        writeMemberName(members[next].key)
                        stack.append(.object(members, next: next + 1))
                        value = members[next].value
                        continue nextValue
                    }
                    output.append(UInt8(ascii: "}"))
                }
            }
            return
        }
    }

    private mutating func writeMemberName(_ key: String) {
        writeString(key)
        output.append(UInt8(ascii: ":"))
    }

    /// Writes scalars and empty containers.
    private mutating func writeLeaf(_ value: JSONValue) {
        switch value {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(true): output.append(contentsOf: "true".utf8)
        case .bool(false): output.append(contentsOf: "false".utf8)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .string(let string): writeString(string)
        case .array: output.append(contentsOf: "[]".utf8)
        case .object: output.append(contentsOf: "{}".utf8)
        }
    }

    private mutating func writeString(_ string: String) {
        output.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { writeEscaped($0) }
        output.append(UInt8(ascii: "\""))
    }

    /// Copies unescaped runs in bulk; only bytes needing an escape break a run.
    private mutating func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        var i = 0
        let count = bytes.count
        while i < count {
            let byte = bytes[i]
            if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") && byte != 0xE2 {
                i += 1
                continue
            }
            if byte == 0xE2 {
                // U+2028 / U+2029 are E2 80 A8 / E2 80 A9.
                guard i + 2 < count, bytes[i + 1] == 0x80, bytes[i + 2] & 0xFE == 0xA8 else {
                    i += 1
                    continue
                }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
                output.append(contentsOf: bytes[i + 2] == 0xA8 ? #"\u2028"#.utf8 : #"\u2029"#.utf8)
                i += 3
                runStart = i
                continue
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): output.append(contentsOf: #"\\"#.utf8)
            case 0x0A: output.append(contentsOf: #"\n"#.utf8)
            case 0x0D: output.append(contentsOf: #"\r"#.utf8)
            case 0x09: output.append(contentsOf: #"\t"#.utf8)
            case 0x08: output.append(contentsOf: #"\b"#.utf8)
            case 0x0C: output.append(contentsOf: #"\f"#.utf8)
            default:
                let hexDigits: StaticString = "0123456789abcdef"
                output.append(contentsOf: #"\u00"#.utf8)
                output.append(hexDigits.utf8Start[Int(byte >> 4)])
                output.append(hexDigits.utf8Start[Int(byte & 0x0F)])
            }
            i += 1
            runStart = i
        }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<count]))
    }
}
