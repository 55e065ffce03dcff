/// The parts of one number matched against the RFC 8259 grammar
/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
///
/// Shared by the parser (which only needs the end) and ``CanonicalNumber``
/// (which needs the parts), so both agree on what a number is.
struct NumberSyntax {
    var isNegative = false
    /// Integer-part digits.
    var integer: Range<Int>
    /// Fraction digits; empty when there is no fraction.
    var fraction: Range<Int>
    var exponentIsNegative = false
    /// Exponent digits; empty when there is no exponent.
    var exponent: Range<Int>
    /// Offset just past the last byte of the number.
    var end: Int

    /// Matches one number starting at `start`; the number ends at the first
    /// byte the grammar cannot take, and the caller decides whether that byte
    /// may follow a number.
    static func scan(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int
    ) throws(JSONParseError) -> NumberSyntax {
        let count = bytes.count
        var i = start
        @inline(__always) func isDigit(_ i: Int) -> Bool {
            i < count && bytes[i] &- UInt8(ascii: "0") < 10
        }

        var syntax = NumberSyntax(integer: i..<i, fraction: i..<i, exponent: i..<i, end: i)
        if i < count, bytes[i] == UInt8(ascii: "-") {
            syntax.isNegative = true
            i += 1
        }
        let integerStart = i
        guard isDigit(i) else {
            throw JSONParseError(.invalidNumber, at: i, "expected a digit in number")
        }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if isDigit(i) {
                throw JSONParseError(.invalidNumber, at: i, "leading zeros are not allowed in numbers")
            }
        } else {
            while isDigit(i) { i += 1 }
        }
        syntax.integer = integerStart..<i

        if i < count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            let fractionStart = i
            while isDigit(i) { i += 1 }
            guard i > fractionStart else {
                throw JSONParseError(.invalidNumber, at: i, "expected a digit after the decimal point")
            }
            syntax.fraction = fractionStart..<i
        } else {
            syntax.fraction = i..<i
        }

        if i < count, bytes[i] | 0x20 == UInt8(ascii: "e") {
            i += 1
            if i < count, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") {
                syntax.exponentIsNegative = bytes[i] == UInt8(ascii: "-")
                i += 1
            }
            let exponentStart = i
            while isDigit(i) { i += 1 }
            guard i > exponentStart else {
                throw JSONParseError(.invalidNumber, at: i, "expected a digit in the exponent")
            }
            syntax.exponent = exponentStart..<i
        } else {
            syntax.exponent = i..<i
        }

        syntax.end = i
        return syntax
    }
}

extension JSONValue {
    /// Returns whether `text` is exactly one RFC 8259 number (no sign `+`, no
    /// leading zeros, no surrounding whitespace), i.e. valid for ``number(_:)``.
    public static func isValidNumber(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard let syntax = try? NumberSyntax.scan(bytes, from: 0) else { return false }
            return syntax.end == bytes.count
        }
    }
}
