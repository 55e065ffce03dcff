import Foundation
import LarderTestSupport
import Testing
@testable import LarderS3

/// A multipart upload's checksum: S3's rules for CreateMultipartUpload's
/// algorithm and type, the composite digest (checked against one S3
/// answered, quoted in floci-io/floci#3083), and the type kept in an
/// object's attributes beside values written before it existed.
@Suite(.blockingLane) struct MultipartChecksumTests {
    @Test func createTakesS3sPairs() throws {
        #expect(try UploadChecksum.requested(algorithm: nil, type: nil) == nil)
        #expect(try UploadChecksum.requested(algorithm: "CRC32", type: nil) == UploadChecksum(algorithm: .crc32, type: .composite))
        #expect(try UploadChecksum.requested(algorithm: "crc32c", type: "FULL_OBJECT")
                == UploadChecksum(algorithm: .crc32c, type: .fullObject))
        #expect(try UploadChecksum.requested(algorithm: "CRC64NVME", type: nil) == UploadChecksum(algorithm: .crc64nvme, type: .fullObject))
        #expect(try UploadChecksum.requested(algorithm: "SHA1", type: "COMPOSITE") == UploadChecksum(algorithm: .sha1, type: .composite))
        for (algorithm, type) in [("SHA256", "FULL_OBJECT"), ("SHA1", "FULL_OBJECT"), ("CRC64NVME", "COMPOSITE"), (nil, "COMPOSITE"),
                                  ("CRC32", "WHOLE"), ("MD5", nil)] as [(String?, String?)] {
            #expect(throws: S3Error.self, "\(algorithm ?? "-") \(type ?? "-")") {
                try UploadChecksum.requested(algorithm: algorithm, type: type)
            }
        }
    }

    @Test func partsCarryTheUploadsChecksum() throws {
        let composite = UploadChecksum(algorithm: .sha256, type: .composite)
        try composite.check(part: .sha256)
        #expect(throws: S3Error.self) { try composite.check(part: nil) }
        #expect(throws: S3Error.self) { try composite.check(part: .crc32) }
        let full = UploadChecksum(algorithm: .crc64nvme, type: .fullObject)
        try full.check(part: nil)
        #expect(throws: S3Error.self) { try full.check(part: .crc32) }
    }

    /// Three parts' SHA256s and the composite S3 made of them.
    @Test func compositeIsS3s() {
        let parts = ["lcKa6Boe7a167tUCN5C4OaFygGSYD8MBnBARTrdL+1w=", "gHjhbUT4oo2tSCtSZJdlKi+jeNXJT+VImqdPXsXvkOc=",
                     "4l9PQ3zOPZ0oGFvknFX+J4zZwE4WMzO+l3r8XrbWOeM="].map { Array(Data(base64Encoded: $0)!) }
        var attributes = ObjectAttributes(headers: [], checksum: .sha256, type: .composite)
        attributes.parts = 3
        attributes.checksum = (.sha256, UploadChecksum(algorithm: .sha256, type: .composite).composite(of: parts))
        #expect(attributes.checksumText == "rVWtNbadtsaKXJAcgWPWjifHzJaXde/iV4jaJAOdivc=-3")
    }

    @Test func theTypeIsKept() throws {
        var composite = ObjectAttributes(headers: [("x-amz-meta-a", "b")], checksum: .crc32, type: .composite)
        composite.parts = 2
        let decoded = try #require(ObjectAttributes(decoding: composite.encoded()))
        #expect(decoded == composite && decoded.checksumType == .composite)
        #expect(decoded.responseHeaders(checksumMode: true).contains { $0 == ("x-amz-checksum-type", "COMPOSITE") })
        // Written before the type existed: the checksum byte is the bare code, a full-object checksum.
        let full = ObjectAttributes(headers: [], checksum: .crc32)
        var old = full.encoded()
        #expect(old[21] == ChecksumAlgorithm.crc32.code)
        old[21] = ChecksumAlgorithm.crc32.code
        #expect(try #require(ObjectAttributes(decoding: old)).checksumType == .fullObject)
        #expect(UploadChecksum(record: ObjectAttributes(decoding: composite.encoded())) == UploadChecksum(algorithm: .crc32, type: .composite))
    }

    @Test func partSizesAndDigestsAreKeptWhenTheyFit() throws {
        var object = ObjectAttributes(headers: [("x-amz-meta-a", "b")], checksum: .crc32, type: .composite)
        object.parts = 3
        object.partSizes = [5 << 20, 127, 1 << 40]
        object.partDigests = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
        let decoded = try #require(ObjectAttributes(decoding: object.encoded()))
        #expect(decoded == object)
        // Without digests (a part had none): the sizes alone.
        object.partDigests = nil
        #expect(try #require(ObjectAttributes(decoding: object.encoded())).partSizes == [5 << 20, 127, 1 << 40])
        // Too many to keep: none, and the rest as before (the count, the headers).
        object.partSizes = Array(repeating: 5 << 20, count: 2000)
        object.parts = 2000
        let many = try #require(ObjectAttributes(decoding: object.encoded()))
        #expect(many.partSizes == nil && many.parts == 2000 && many.headers.first?.value == "b")
        // Written before parts were kept: the headers end the value.
        object.partSizes = nil
        #expect(try #require(ObjectAttributes(decoding: object.encoded())).partSizes == nil)
    }
}
