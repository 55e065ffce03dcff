import LarderHTTP
@testable import LarderS3
import LarderTestSupport
import Testing

/// The operation names the journal and `/metrics` show, for the requests
/// SDKs send (method, path, query as boto3 sends them), and the access key
/// a request claims, which picks the journal of a refused one.
@Suite(.blockingLane) struct S3OperationNameTests {
    struct ParseFailed: Error {}

    static let cases: [(HTTPMethod, String, String?, Bool, String)] = [
        (.get, "/", nil, false, "ListBuckets"),
        (.put, "/b1", nil, false, "CreateBucket"),
        (.head, "/b1", nil, false, "HeadBucket"),
        (.delete, "/b1", nil, false, "DeleteBucket"),
        (.get, "/b1", "location", false, "GetBucketLocation"),
        (.get, "/b1", "list-type=2&prefix=a%2F", false, "ListObjectsV2"),
        (.get, "/b1", "prefix=a&marker=b", false, "ListObjects"),
        (.post, "/b1", "delete", false, "DeleteObjects"),
        (.get, "/b1", "uploads", false, "ListMultipartUploads"),
        (.get, "/b1", "acl", false, "GetBucketAcl"),
        (.put, "/b1", "versioning", false, "PutBucketVersioning"),
        (.get, "/b1", "publicAccessBlock", false, "GetPublicAccessBlock"),
        (.put, "/b1/k", nil, false, "PutObject"),
        (.put, "/b1/k", "x-id=PutObject", false, "PutObject"),
        (.put, "/b1/k", nil, true, "CopyObject"),
        (.get, "/b1/dir/k", nil, false, "GetObject"),
        (.head, "/b1/k", nil, false, "HeadObject"),
        (.delete, "/b1/k", nil, false, "DeleteObject"),
        (.post, "/b1/k", "uploads", false, "CreateMultipartUpload"),
        (.put, "/b1/k", "partNumber=1&uploadId=u", false, "UploadPart"),
        (.put, "/b1/k", "partNumber=1&uploadId=u", true, "UploadPartCopy"),
        (.post, "/b1/k", "uploadId=u", false, "CompleteMultipartUpload"),
        (.delete, "/b1/k", "uploadId=u", false, "AbortMultipartUpload"),
        (.get, "/b1/k", "uploadId=u", false, "ListParts"),
        (.get, "/b1/k", "tagging", false, "GetObjectTagging"),
        (.patch, "/b1/k", nil, false, "Unknown"),
        (.post, "/", nil, false, "Unknown"),
    ]

    @Test func operationsAreNamedAsAWSNamesThem() {
        for (method, path, query, copy, name) in Self.cases {
            let named = S3OperationName.of(method, S3Path(path[...]), S3Query(query?[...]), copySource: copy)
            #expect(named == name, "\(method) \(path)?\(query ?? "")")
        }
        // Virtual-host style: the path is the key.
        #expect(S3OperationName.of(.get, S3Path("/k", host: "b1.localhost:9000"), S3Query(nil), copySource: false) == "GetObject")
        #expect(S3OperationName.of(.get, S3Path("/", host: "b1.localhost"), S3Query("list-type=2"), copySource: false)
                    == "ListObjectsV2")
    }

    @Test func theClaimedKeyIsReadFromTheHeaderOrThePresignedQuery() throws {
        func head(_ target: String, _ headers: [(String, String)]) throws -> HTTPRequestHead {
            var parser = HTTPRequestParser(configuration: HTTPServerConfiguration())
            var text = "GET \(target) HTTP/1.1\r\nHost: localhost\r\n"
            for (name, value) in headers { text += "\(name): \(value)\r\n" }
            text += "\r\n"
            let result = Array(text.utf8).withUnsafeBytes { parser.parse($0) }
            guard case .complete(let head, _) = result else { throw ParseFailed() }
            return head
        }
        let signed = "AWS4-HMAC-SHA256 Credential=w1-key/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00"
        #expect(S3ClaimedKey.of(try head("/b1/k", [("Authorization", signed)])) == "w1-key")
        #expect(S3ClaimedKey.of(try head("/b1/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=w2-key%2F20260101%2Fus-east-1%2Fs3%2Faws4_request", []))
                    == "w2-key")
        #expect(S3ClaimedKey.of(try head("/b1/k", [])) == nil)
    }

    @Test func virtualHostBuckets() {
        let cases: [(String, String?)] = [
            ("photos.localhost:9000", "photos"), ("Photos.LOCALHOST", "photos"), ("a.b.localhost", "a.b"), ("a.localhost:", "a"),
            ("localhost:9000", nil), (".localhost", nil), ("127.0.0.1:9000", nil), ("[::1]:9000", nil), ("photos.localhost:90a", nil),
            ("photos.example.com", nil), ("Ünï.localhost", "ünï"),
        ]
        for (host, bucket) in cases { #expect(S3Path.virtualHostBucket(host) == bucket, "\(host)") }
    }
}
