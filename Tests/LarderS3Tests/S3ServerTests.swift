import Foundation
import LarderApp
import LarderRouting
import LarderServer
import LarderS3
import LarderTestSupport
import Testing

/// The S3 face as part of the whole server, with boto3 against a real
/// server (each scenario of Tests/s3/boto3_server.py on a fresh one): keys
/// bound to namespaces (isolated from each other, the same store as
/// `/ns/<name>/store/`, resets and drops seen), S3 requests in the request
/// journal with their operation's name, fault rules acting on S3 requests
/// by key prefix (S3's error codes, boto3's retries, the network faults),
/// and `larder_s3_requests_total` on `/metrics`.
@Suite(.blockingLane) struct S3ServerTests {
    /// The keys of boto3_server.py's `KEYS`.
    static let credentials = S3Credentials(
        keys: ["default-key": "default-secret", "w1-key": "w1-secret", "w2-key": "w2-secret"],
        namespaces: ["w1-key": "w1", "w2-key": "w2"])

    @Test(arguments: ["namespaces", "journal", "faults", "metrics"])
    func scenario(_ name: String) async throws {
        try PythonRunner.require([("boto3", "boto3"), ("prometheus_client", "prometheus_client")])
        let server = try TestServer {
            $0.s3 = S3Configuration(port: 0, credentials: Self.credentials)
            $0.allowFaults = true
        }
        defer { server.stop() }
        let s3Port = try #require(server.s3Port)
        let result = try await PythonRunner.run(
            [Repository.path("Tests/s3/boto3_server.py"), name, "http://127.0.0.1:\(s3Port)", "http://127.0.0.1:\(server.port)"],
            environment: ["AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"], timeout: 300)
        #expect(!result.timedOut)
        #expect(result.status == 0, "\(name): \(result.stderr)")
        #expect(result.stdout.hasSuffix("ok\n"))
    }

    /// A key bound to a namespace counts against `--max-namespaces` as a
    /// request under `/ns/<name>/` does: over it, S3's error names why.
    @Test func aKeysNamespaceOverTheLimitIsRefused() async throws {
        try PythonRunner.require([("boto3", "boto3")])
        let server = try TestServer {
            $0.s3 = S3Configuration(port: 0, credentials: Self.credentials)
            $0.maxNamespaces = 1
        }
        defer { server.stop() }
        let s3Port = try #require(server.s3Port)
        let code = """
            import sys, boto3
            from botocore.client import Config
            from botocore.exceptions import ClientError
            def client(key, secret):
                return boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id=key,
                                    aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1}))
            client("w1-key", "w1-secret").create_bucket(Bucket="bkt")
            try:
                client("w2-key", "w2-secret").create_bucket(Bucket="bkt")
                print("created")
            except ClientError as e:
                print(e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
            """
        let result = try PythonRunner.run(code: code, arguments: ["http://127.0.0.1:\(s3Port)"],
                                          environment: ["AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "507 NamespaceLimit\n")
    }
}
