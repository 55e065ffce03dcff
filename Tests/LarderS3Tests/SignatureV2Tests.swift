import LarderHTTP
import LarderWire
@testable import LarderS3
import LarderTestSupport
import Testing

/// Signature Version 2's string to sign and signature against the
/// examples AWS publishes ("Signing and authenticating REST requests"),
/// with its example secret; botocore's own V2 signing is checked against
/// the server in Tests/s3/boto3_face.py (`signature_v2`).
@Suite(.blockingLane) struct SignatureV2Tests {
    static let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

    static func head(_ text: String) throws -> HTTPRequestHead {
        var parser = HTTPRequestParser(configuration: HTTPServerConfiguration())
        let bytes = Array(text.utf8)
        let result = bytes.withUnsafeBytes { parser.parse($0) }
        guard case .complete(let head, _) = result else { throw ClientError("not a request head: \(result)") }
        return head
    }

    @Test(arguments: [
        ("GET /photos/puppy.jpg HTTP/1.1\r\nHost: awsexamplebucket1.s3.us-west-1.amazonaws.com\r\nDate: Tue, 27 Mar 2007 19:36:42 +0000\r\n\r\n",
         "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/awsexamplebucket1/photos/puppy.jpg", "qgk2+6Sv9/oM7G3qLEjTH1a1l1g="),
        ("PUT /photos/puppy.jpg HTTP/1.1\r\nHost: awsexamplebucket1.s3.us-west-1.amazonaws.com\r\nContent-Type: image/jpeg\r\nContent-Length: 94328\r\nDate: Tue, 27 Mar 2007 21:15:45 +0000\r\n\r\n",
         "PUT\n\nimage/jpeg\nTue, 27 Mar 2007 21:15:45 +0000\n/awsexamplebucket1/photos/puppy.jpg", "iqRzw+ileNPu1fhspnRs8nOjjIA="),
    ])
    func awsExamples(_ request: String, _ stringToSign: String, _ signature: String) throws {
        let head = try Self.head(request)
        let toSign = SignatureV2.stringToSign(head, dateLine: head.headers["Date"] ?? "", virtualHostBucket: "awsexamplebucket1")
        #expect(toSign == stringToSign)
        #expect(SignatureV2.signature(secret: Self.secret, stringToSign: toSign) == signature)
    }

    @Test func amzHeadersAndSubresourcesAreSignedSortedAndTheDateLineIsEmptyWithXAmzDate() throws {
        let head = try Self.head("PUT /b/k?tagging&x-id=PutObjectTagging HTTP/1.1\r\nHost: h\r\nx-amz-meta-b: two\r\n"
            + "X-Amz-Date: Tue, 27 Mar 2007 21:15:45 +0000\r\nx-amz-meta-a:  one \r\nx-amz-meta-b: three\r\nContent-MD5: abc=\r\n\r\n")
        let toSign = SignatureV2.stringToSign(head, dateLine: "", virtualHostBucket: nil)
        #expect(toSign == "PUT\nabc=\n\n\nx-amz-date:Tue, 27 Mar 2007 21:15:45 +0000\nx-amz-meta-a:one\nx-amz-meta-b:two,three\n/b/k?tagging")
        #expect(SignatureV2.isBareBucket(try Self.head("PUT /b HTTP/1.1\r\nHost: h\r\n\r\n"), virtualHostBucket: nil))
        #expect(!SignatureV2.isBareBucket(head, virtualHostBucket: nil))
    }
}
