import Foundation
import LarderSupport
import LarderTestSupport
import Testing

/// `PercentDecoding`: the one `%XX` decoder (keys, queries, the access log's
/// redaction, libpq URIs).
@Suite(.blockingLane) struct PercentDecodingTests {
    @Test func decodesEscapesInEitherCase() {
        #expect(PercentDecoding.decode("") == [])
        #expect(PercentDecoding.decode("plain/key") == Array("plain/key".utf8))
        #expect(PercentDecoding.decode("a%2Fb%2fc") == Array("a/b/c".utf8))
        #expect(PercentDecoding.decode("%00%FF%e9") == [0x00, 0xFF, 0xE9])
        #expect(PercentDecoding.decode("%25%32%35") == Array("%25".utf8), "decoded once only")
        #expect(PercentDecoding.decode("a+b") == Array("a+b".utf8), "+ stays +")
        #expect(PercentDecoding.decode("caf%C3%A9"[...]) == Array("café".utf8))
        #expect(PercentDecoding.decode(Array("access%5Ftoken".utf8)[...]) == Array("access_token".utf8))
        // A slice that does not start at 0.
        let bytes = Array("xx%41%42".utf8)
        #expect(PercentDecoding.decode(bytes[2...]) == Array("AB".utf8))
        #expect(PercentDecoding.decode("xx%41%42".dropFirst(2)) == Array("AB".utf8))
    }

    @Test func malformedEscapesAreNil() {
        for bad in ["%", "%4", "a%", "a%4", "%G0", "%0G", "%%", "%%41", "% 41", "abc%2"] {
            #expect(PercentDecoding.decode(Substring(bad)) == nil, "\(bad)")
            #expect(PercentDecoding.decode(Array(bad.utf8)[...]) == nil, "\(bad)")
            #expect(PercentDecoding.decodeString(Substring(bad)) == nil, "\(bad)")
        }
    }

    @Test func keepingMalformedTakesABadEscapeLiterally() {
        // S3's form: a `%` without two hex digits after it stays as it is, and decoding goes on.
        let cases: [(String, String)] = [("%", "%"), ("a%", "a%"), ("%4", "%4"), ("%G0", "%G0"), ("%%41", "%A"),
                                         ("50%25", "50%"), ("a%2Fb%zz%2f", "a/b%zz/"), ("a+b", "a+b"), ("", "")]
        for (text, expected) in cases {
            #expect(PercentDecoding.decode(Substring(text), keepingMalformed: true) == Array(expected.utf8), "\(text)")
            #expect(PercentDecoding.decode(Array(text.utf8)[...], keepingMalformed: true) == Array(expected.utf8), "\(text)")
        }
    }

    @Test func decodeStringAgreesWithFoundation() {
        for text in ["", "a", "a+b", "caf%C3%A9", "%2F%2f", "%C3", "%FF", "%C3%28", "%", "%zz", "50%", "%E2%82%AC", "x%41y"] {
            #expect(PercentDecoding.decodeString(Substring(text)) == text.removingPercentEncoding, "\(text)")
        }
    }
}

/// `ConstantTime`: the bearer token's and SigV4's compare.
@Suite(.blockingLane) struct ConstantTimeTests {
    @Test func equalOnlyForTheSameBytes() {
        let secret = Array("0123456789abcdef".utf8)
        #expect(ConstantTime.equals(secret, secret))
        #expect(ConstantTime.equals("0123456789abcdef".utf8, secret))
        #expect(ConstantTime.equals(secret[...], secret))
        #expect(!ConstantTime.equals(secret.dropLast(), secret))
        #expect(!ConstantTime.equals(secret + secret, secret), "a repetition of the secret")
        #expect(!ConstantTime.equals("0123456789ABCDEF".utf8, secret), "case counts")
        #expect(!ConstantTime.equals([UInt8](), secret))
        #expect(!ConstantTime.equals([UInt8](), []), "an empty secret matches nothing")
        for i in secret.indices {
            var other = secret
            other[i] ^= 0x01
            #expect(!ConstantTime.equals(other, secret), "byte \(i)")
        }
    }
}

/// `Lock`, now a `Locked<Void>`: mutual exclusion, and errors pass through typed.
@Suite(.blockingLane) struct LockTests {
    struct Oops: Error, Equatable {}
    final class Box: @unchecked Sendable { var count = 0 }

    @Test func excludesAndRethrows() throws {
        let lock = Lock()
        let counter = Locked(0)
        let plain = Box()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<10_000 {
                lock.withLock { plain.count += 1 }
                counter.withLock { $0 += 1 }
            }
        }
        #expect(lock.withLock { plain.count } == 40_000)
        #expect(counter.withLock { $0 } == 40_000)
        #expect(throws: Oops.self) { try lock.withLock { () throws(Oops) in throw Oops() } }
        #expect(lock.withLock { 7 } == 7, "the lock is free again after a throw")
    }
}
