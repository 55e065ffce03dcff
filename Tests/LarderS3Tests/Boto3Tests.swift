import LarderApp
import LarderRouting
import LarderServer
import LarderS3
import LarderTestSupport
import Testing

/// boto3 against real servers' S3 listeners: each scenario of
/// Tests/s3/boto3_face.py on a fresh server (buckets, objects and ranges,
/// listings with pagination and delimiters, keys with empty, `.` and `..`
/// segments (folder markers), the plain API and S3 on one
/// store, signatures refused, checksums and aws-chunked bodies, metadata and
/// MD5 ETags kept with objects, CopyObject, multipart uploads, virtual-host
/// style addressing, what generic cleanup code calls: versions, ACLs;
/// server-side encryption's headers, object tags, Signature Version 2). One Python process runs every scenario, each against
/// the server started for it here; a failed scenario is reported by name.
@Suite(.longBlockingLane) struct Boto3Tests {
    static let accessKey = "test-access-key"
    static let secret = "test-secret-key"
    static let scenarios = ["buckets", "objects", "listing", "folder_keys", "interop", "auth", "checksums", "metadata",
                            "copy", "multipart", "virtual_host", "generic_cleanup", "encryption",
                            "tagging", "signature_v2", "post_object", "bucket_settings"]

    @Test func everyScenarioOnAServerOfItsOwn() async throws {
        try PythonRunner.require([("boto3", "boto3")])
        let servers = try Self.scenarios.map { _ in
            try TestServer {
                $0.s3 = S3Configuration(port: 0, credentials: S3Credentials(keys: [Self.accessKey: Self.secret]))
            }
        }
        defer { servers.forEach { $0.stop() } }
        var arguments = [Repository.path("Tests/s3/boto3_face.py"), Self.accessKey, Self.secret]
        for (name, server) in zip(Self.scenarios, servers) {
            let s3Port = try #require(server.s3Port)
            arguments += [name, "http://127.0.0.1:\(s3Port)", "http://127.0.0.1:\(server.port)"]
        }
        let result = try await PythonRunner.run(
            arguments, environment: ["AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"],
            timeout: 900)
        let outcomes = ScenarioOutcome.parse(result.stdout)
        #expect(!result.timedOut)
        #expect(outcomes.map(\.scenario) == Self.scenarios, "scenarios run: \(outcomes.map(\.scenario))\n\(result.stderr)")
        ScenarioOutcome.recordFailures(outcomes)
        #expect(result.status == (outcomes.contains { !$0.ok } ? 1 : 0), "the script exited \(result.status): \(result.stderr)")
    }
}
