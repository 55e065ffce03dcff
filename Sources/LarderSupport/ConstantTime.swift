/// Comparing a secret with what a client sent, in a time that depends only
/// on the length of what was sent: not on where the two first differ, nor
/// on the secret's length, so response times tell an attacker nothing
/// about the token byte by byte. The one copy: the bearer token
/// (`TokenAuth`) and SigV4 request and chunk signatures (LarderS3).
public enum ConstantTime {
    /// Whether `given` equals `secret`. Every byte of `given` is compared
    /// (against the secret repeated), and the length difference is folded
    /// into the same accumulator; there is no early exit. An empty secret
    /// matches nothing.
    @inlinable
    public static func equals(_ given: some Collection<UInt8>, _ secret: [UInt8]) -> Bool {
        guard !secret.isEmpty else { return false }
        var difference = UInt(bitPattern: given.count ^ secret.count)
        var i = 0
        for byte in given {
            difference |= UInt(byte ^ secret[i])
            i += 1
            if i == secret.count { i = 0 }
        }
        return difference == 0
    }
}
