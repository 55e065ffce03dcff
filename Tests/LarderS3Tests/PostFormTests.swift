import Foundation
@testable import LarderS3
import Testing

/// A browser upload's form as `PostObjectSink` reads it: the streaming
/// form-data reader (the same parts however the body is cut into reads) and
/// the POST policy (its document's rules and its conditions). The whole
/// upload, signed by botocore, runs against a server in
/// Tests/s3/post_uploads.py; Ceph's s3-tests judge it too (docs/s3.md).
@Suite(.blockingLane) struct PostFormTests {
    /// What the reader found: each part's head and its bytes.
    static func read(_ body: [UInt8], boundary: String, cuts: [Int]) throws -> (parts: [(FormDataReader.PartHead, [UInt8])], complete: Bool) {
        var reader = FormDataReader(boundary: boundary)
        var parts: [(FormDataReader.PartHead, [UInt8])] = []
        var start = 0
        for end in cuts + [body.count] where end >= start {
            try body[start..<end].withUnsafeBytes { chunk in
                try reader.feed(chunk) { event in
                    switch event {
                    case .head(let head): parts.append((head, []))
                    case .bytes(let bytes): parts[parts.count - 1].1 += Array(bytes)
                    case .partEnd: break
                    }
                }
            }
            start = end
        }
        return (parts, reader.isComplete)
    }

    static let boundary = "----WebKitFormBoundary7MA4YWxkTrZu0gW"
    /// A browser's form: two fields, then a file whose bytes hold CRLFs,
    /// dashes and most of the boundary (never the whole delimiter).
    static let fileBytes = Array("line one\r\n--\r\n------WebKitFormBoundary7MA4YWxk\r\nend".utf8) + [0, 255, 13]
    static var body: [UInt8] {
        var text = "--\(boundary)\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nuploads/${filename}\r\n"
        text += "--\(boundary)\r\nContent-Disposition: form-data; name=\"x-amz-meta-note\"\r\n\r\nsemi; \"quoted\"\r\n"
        text += "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a \\\"b\\\".txt\"\r\n"
        text += "Content-Type: text/plain\r\n\r\n"
        return Array(text.utf8) + fileBytes + Array("\r\n--\(boundary)--\r\nepilogue".utf8)
    }

    @Test func everyCutOfTheBodyReadsTheSameParts() throws {
        let body = Self.body
        for cut in 0...body.count {
            let (parts, complete) = try Self.read(body, boundary: Self.boundary, cuts: [cut])
            #expect(complete, "cut at \(cut)")
            #expect(parts.map(\.0.name) == ["key", "x-amz-meta-note", "file"], "cut at \(cut)")
            #expect(parts.map(\.1) == [Array("uploads/${filename}".utf8), Array("semi; \"quoted\"".utf8), Self.fileBytes],
                    "cut at \(cut)")
            #expect(parts.last?.0.filename == "a \"b\".txt" && parts.last?.0.contentType == "text/plain")
        }
        // A byte at a time.
        let (parts, complete) = try Self.read(body, boundary: Self.boundary, cuts: Array(0..<body.count))
        #expect(complete && parts.last?.1 == Self.fileBytes)
    }

    @Test func aBodyCutShortIsIncompleteAndNotAFormIsRefused() throws {
        let body = Self.body
        let short = Array(body[..<(body.count - 20)])
        #expect(try !Self.read(short, boundary: Self.boundary, cuts: []).complete)
        let bad = Array("--\(Self.boundary)\r\nContent-Type: text/plain\r\n\r\nx\r\n--\(Self.boundary)--".utf8)
        #expect(throws: S3Error.self) { try Self.read(bad, boundary: Self.boundary, cuts: []) }
        let garbled = Array("--\(Self.boundary)XX\r\n".utf8)
        #expect(throws: S3Error.self) { try Self.read(garbled, boundary: Self.boundary, cuts: []) }
    }

    @Test func theBoundaryComesFromAFormsContentTypeOnly() {
        #expect(FormDataReader.boundary(contentType: "multipart/form-data; boundary=abc") == "abc")
        #expect(FormDataReader.boundary(contentType: "Multipart/Form-Data; charset=utf-8; boundary=\"a b\"") == "a b")
        #expect(FormDataReader.boundary(contentType: "multipart/mixed; boundary=abc") == nil)
        #expect(FormDataReader.boundary(contentType: "multipart/form-data") == nil)
        #expect(FormDataReader.boundary(contentType: "application/x-www-form-urlencoded") == nil)
    }

    // MARK: - The policy

    static func policy(_ document: String) throws -> PostPolicy {
        try PostPolicy(base64: Data(document.utf8).base64EncodedString())
    }

    static let now: Int64 = 1_800_000_000
    static let inDate = "2027-01-15T08:00:00Z"  // after `now`

    @Test func conditionsHoldOrTheUploadIsRefusedWith403() throws {
        let policy = try Self.policy("""
            {"expiration": "\(Self.inDate)", "conditions": [{"BUCKET": "b"}, ["Starts-With", "$Key", "up/"],
             ["eq", "$acl", "private"], ["starts-with", "$Content-Type", "image/"], ["content-length-range", 1, "2048"],
             ["starts-with", "$x-amz-meta-tag", ""]]}
            """)
        #expect(policy.contentLengthRange == 1...2048)
        let fields = ["key": "up/a.png", "acl": "private", "content-type": "image/png", "x-amz-meta-tag": "anything",
                      "policy": "…", "signature": "…", "awsaccesskeyid": "k", "x-ignore-me": "1", "x-amz-checksum-crc32": "AAAAAA=="]
        try policy.check(fields: fields, bucket: "b", nowSeconds: Self.now)
        // A list of content types: each must start so.
        try policy.check(fields: fields.merging(["content-type": "image/png, image/gif"]) { $1 }, bucket: "b", nowSeconds: Self.now)
        for (change, why) in [(["key": "down/a.png"], "a key outside the prefix"), (["acl": "public-read"], "another ACL"),
                              (["content-type": "image/png, text/plain"], "one type of a list outside the prefix"),
                              (["x-amz-meta-extra": "1"], "a field the policy does not name")] {
            #expect(Self.code { try policy.check(fields: fields.merging(change) { $1 }, bucket: "b", nowSeconds: Self.now) }
                    == "AccessDenied", "\(why)")
        }
        #expect(Self.code { try policy.check(fields: fields, bucket: "other", nowSeconds: Self.now) } == "AccessDenied")
        // A field left out is empty: allowed by an empty prefix, not by another.
        var missing = fields
        missing["x-amz-meta-tag"] = nil
        try policy.check(fields: missing, bucket: "b", nowSeconds: Self.now)
        missing["acl"] = nil
        #expect(Self.code { try policy.check(fields: missing, bucket: "b", nowSeconds: Self.now) } == "AccessDenied")
        let expired = Self.code { try policy.check(fields: fields, bucket: "b", nowSeconds: 1_900_000_000) }
        #expect(expired == "AccessDenied")
        let unnamed = try Self.policy(#"{"expiration": "\#(Self.inDate)", "conditions": [["starts-with", "$key", ""]]}"#)
        #expect(Self.code { try unnamed.check(fields: ["key": "k"], bucket: "b", nowSeconds: Self.now) } == "AccessDenied")
    }

    @Test(arguments: [
        "not base64 at all!",
        #"{"expiration": "2027-01-15 08:00:00+00:00", "conditions": []}"#,
        #"{"EXPIRATION": "2027-01-15T08:00:00Z", "conditions": []}"#,
        #"{"expiration": "2027-01-15T08:00:00Z", "CONDITIONS": []}"#,
        #"{"expiration": "2027-01-15T08:00:00Z"}"#,
        #"{"conditions": []}"#,
        #"{"expiration": "2027-01-15T08:00:00Z", "conditions": [{}]}"#,
        #"{"expiration": "2027-01-15T08:00:00Z", "conditions": [["content-length-range", 0]]}"#,
        #"{"expiration": "2027-01-15T08:00:00Z", "conditions": [["content-length-range", -1, 0]]}"#,
        #"{"expiration": "2027-01-15T08:00:00Z", "conditions": [["content-length-range", 10, 1]]}"#,
        #"{"expiration": "2027-01-15T08:00:00Z", "conditions": [["matches", "$key", "x"]]}"#,
        #"{"expiration": "2027-01-15T08:00:00Z", "conditions": [["eq", "key", "x"]]}"#,
    ])
    func aMalformedPolicyIs400(_ document: String) {
        let code = Self.code {
            _ = document.hasPrefix("{") ? try Self.policy(document) : try PostPolicy(base64: document)
        }
        #expect(code == "InvalidPolicyDocument")
    }

    static func code(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as S3Error {
            return error.code
        } catch {
            return "\(error)"
        }
    }
}
