import Foundation
import LarderTestSupport
import Testing
@testable import LarderS3

/// The checksums S3 takes, against their published check values (the
/// CRC catalogue's "123456789") and against each other across piece sizes.
@Suite(.blockingLane) struct ChecksumTests {
    static let check = Array("123456789".utf8)

    static func digest(_ algorithm: ChecksumAlgorithm, _ bytes: [UInt8], pieceSize: Int = .max) -> [UInt8] {
        var running = RunningChecksum(algorithm)
        var i = 0
        while i < bytes.count {
            let end = min(bytes.count, i + pieceSize)
            bytes[i..<end].withUnsafeBytes { running.update($0) }
            i = end
        }
        return running.finalize()
    }

    @Test func checkValues() {
        #expect(Self.digest(.crc32, Self.check) == [0xCB, 0xF4, 0x39, 0x26])
        #expect(Self.digest(.crc32c, Self.check) == [0xE3, 0x06, 0x92, 0x83])
        #expect(Self.digest(.crc64nvme, Self.check) == [0xAE, 0x8B, 0x14, 0x86, 0x0A, 0x79, 0x98, 0x88])
        #expect(Self.digest(.sha1, Self.check).count == 20)
        #expect(Self.digest(.sha256, []) == Array(Data(base64Encoded: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")!))
    }

    /// Slicing by 8 and the byte-at-a-time tail agree, however the body is cut.
    @Test(arguments: [ChecksumAlgorithm.crc32c, .crc64nvme]) func pieceSizesAgree(_ algorithm: ChecksumAlgorithm) {
        let bytes = (0..<10_007).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let whole = Self.digest(algorithm, bytes)
        for size in [1, 3, 7, 8, 9, 64, 4096] {
            #expect(Self.digest(algorithm, bytes, pieceSize: size) == whole, "piece size \(size)")
        }
    }
}
