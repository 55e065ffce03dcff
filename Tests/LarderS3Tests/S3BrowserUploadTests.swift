import LarderS3
import LarderTestSupport
import Testing

/// A web page's upload into the S3 face, in headless Chromium: a page on an
/// origin of its own `fetch`es a presigned POST with a FormData body and
/// reads the answer where the bucket's CORS rules name its origin, and
/// cannot where they do not (Tests/browser/s3_post_upload.py).
@Suite(.longBlockingLane) struct S3BrowserUploadTests {
    static let accessKey = "browser-key"
    static let secret = "browser-secret"

    @Test func aPageUploadsByAPresignedPostReadableByCORS() async throws {
        try PythonRunner.require([("selenium", "selenium"), ("boto3", "boto3")])
        let server = try TestServer {
            $0.s3 = S3Configuration(port: 0, credentials: S3Credentials(keys: [Self.accessKey: Self.secret]))
        }
        defer { server.stop() }
        let s3Port = try #require(server.s3Port)
        let result = try await PythonRunner.run(
            [Repository.path("Tests/browser/s3_post_upload.py"), "http://127.0.0.1:\(s3Port)", Self.accessKey, Self.secret],
            environment: ["AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"], timeout: 600)
        let outcomes = ScenarioOutcome.parse(result.stdout)
        #expect(!result.timedOut)
        #expect(outcomes.count == 2, "scenarios run: \(outcomes.map(\.scenario))\n\(result.stderr)")
        ScenarioOutcome.recordFailures(outcomes)
        #expect(result.status == (outcomes.contains { !$0.ok } ? 1 : 0), "the script exited \(result.status): \(result.stderr)")
    }
}
