/// A number's value in the canonical form ±0.DIGITS × 10^exponent, with no
/// leading or trailing zeros in DIGITS, so that numerically equal texts (`1`,
/// `1.0`, `1e0`, `10e-1`, `-0` and `0`) compare and hash alike exactly, without
/// rounding through Double.
struct CanonicalNumber: Hashable {
    /// The exponent; it only leaves `Int` range for absurd texts like `1e99999999999999999999`,
    /// which are still compared exactly.
    enum Exponent: Hashable {
        case small(Int)
        /// Sign and decimal magnitude (no leading zeros) of an exponent beyond `Int`.
        case huge(isNegative: Bool, magnitude: [UInt8])
    }

    /// False for zero, so `-0` equals `0`.
    var isNegative: Bool
    /// Significant decimal digits as values 0...9; empty for zero.
    var digits: [UInt8]
    var exponent: Exponent

    /// The canonical form of `text`, or nil if it is not an RFC 8259 number.
    init?(_ text: String) {
        var text = text
        guard let value = text.withUTF8({ CanonicalNumber(validating: $0) }) else { return nil }
        self = value
    }

    private init?(validating bytes: UnsafeBufferPointer<UInt8>) {
        guard let syntax = try? NumberSyntax.scan(bytes, from: 0), syntax.end == bytes.count else {
            return nil
        }
        // Integer and fraction digits read as one digit string; the decimal
        // point sits after the integer part.
        var all: [UInt8] = []
        all.reserveCapacity(syntax.integer.count + syntax.fraction.count)
        for i in syntax.integer { all.append(bytes[i] &- UInt8(ascii: "0")) }
        for i in syntax.fraction { all.append(bytes[i] &- UInt8(ascii: "0")) }

        guard let first = all.firstIndex(where: { $0 != 0 }) else {
            self.isNegative = false
            self.digits = []
            self.exponent = .small(0)
            return
        }
        let last = all.lastIndex(where: { $0 != 0 })!
        self.isNegative = syntax.isNegative
        self.digits = Array(all[first...last])

        // value = 0.d1d2... × 10^(integerDigits - leadingZeros + writtenExponent)
        let shift = syntax.integer.count - first
        var magnitude: [UInt8] = []
        for i in syntax.exponent {
            let digit = bytes[i] &- UInt8(ascii: "0")
            if magnitude.isEmpty && digit == 0 { continue }
            magnitude.append(digit)
        }
        if magnitude.count <= 18 {
            // Fits comfortably: |written| < 10^18 and |shift| is bounded by the text length.
            var written = 0
            for digit in magnitude { written = written * 10 + Int(digit) }
            self.exponent = .small((syntax.exponentIsNegative ? -written : written) + shift)
        } else {
            // |written| ≥ 10^18 > |shift|, so the sign of the sum is the sign of `written`.
            let delta = syntax.exponentIsNegative ? -shift : shift
            let sum = Self.add(delta, toMagnitude: magnitude)
            self.exponent = Self.exponent(isNegative: syntax.exponentIsNegative, magnitude: sum)
        }
    }

    /// Adds a small signed `delta` to a decimal magnitude larger than |delta|.
    private static func add(_ delta: Int, toMagnitude magnitude: [UInt8]) -> [UInt8] {
        var digits = magnitude.map { Int($0) }
        var carry = delta
        var i = digits.count - 1
        while carry != 0 {
            if i < 0 {
                digits.insert(0, at: 0)
                i = 0
            }
            let sum = digits[i] + carry
            var quotient = sum / 10
            var remainder = sum % 10
            if remainder < 0 {
                remainder += 10
                quotient -= 1
            }
            digits[i] = remainder
            carry = quotient
            i -= 1
        }
        let firstNonZero = digits.firstIndex(where: { $0 != 0 }) ?? digits.count
        return digits[firstNonZero...].map { UInt8($0) }
    }

    /// Picks the representation by value, so equal exponents reached by
    /// different routes are stored identically.
    private static func exponent(isNegative: Bool, magnitude: [UInt8]) -> Exponent {
        if magnitude.count <= 19 {
            var text = isNegative ? "-" : ""
            for digit in magnitude { text.append(Character(Unicode.Scalar(digit + UInt8(ascii: "0")))) }
            if let value = Int(text) { return .small(value) }
        }
        return .huge(isNegative: isNegative, magnitude: magnitude)
    }
}

extension CanonicalNumber {
    /// Compares two number texts by value; texts that are not valid numbers
    /// only equal identical text.
    static func textsEqual(_ a: String, _ b: String) -> Bool {
        if a == b { return true }
        // Fast path without allocation: two plain integers (the common case)
        // are equal only if identical, except for the zeros `0` and `-0`.
        if isPlainInteger(a) && isPlainInteger(b) {
            return isZeroText(a) && isZeroText(b)
        }
        guard let x = CanonicalNumber(a), let y = CanonicalNumber(b) else { return false }
        return x == y
    }

    private static func isPlainInteger(_ text: String) -> Bool {
        !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }
    }

    private static func isZeroText(_ text: String) -> Bool {
        text == "0" || text == "-0"
    }
}
