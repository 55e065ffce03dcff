import Foundation
import LarderS3
import LarderTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `larder --s3-port` and the ways to give it keys, through the built
/// binary: the default pair, the environment's pair, a credentials file,
/// and the settings refused at start.
@Suite(.blockingLane) struct S3FlagsTests {
    /// The listener's port, from the `S3 listening on http://host:port` line.
    static func s3Port(in log: String) -> Int? {
        guard let range = log.range(of: "S3 listening on http://") else { return nil }
        let rest = log[range.upperBound...].prefix { $0 != "\n" }
        return rest.split(separator: ":").last.flatMap { Int($0) }
    }

    /// Lists the buckets with boto3 signing as `key`/`secret`; the error code, or "ok".
    static func listBuckets(port: Int, key: String, secret: String) throws -> String {
        let code = """
            import sys, boto3
            from botocore.exceptions import ClientError
            s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                              aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3])
            try:
                s3.list_buckets()
                print("ok")
            except ClientError as e:
                print(e.response["Error"]["Code"])
            """
        let result = try PythonRunner.run(code: code, arguments: ["http://127.0.0.1:\(port)", key, secret],
                                          environment: ["AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"])
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + (result.status == 0 ? "" : " " + result.stderr)
    }

    /// Starts `larder --ephemeral --s3-port 0 arguments…` and the S3 port it logs.
    static func start(_ arguments: [String] = [], environment: [String: String] = [:]) throws -> (ChildServer, Int) {
        let child = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--s3-port", "0"] + arguments, environment: environment)
        var port: Int?
        try Poll.until(20, "the S3 listener's log line") {
            port = s3Port(in: child.log)
            return port != nil
        }
        return (child, port!)
    }

    static func stop(_ child: ChildServer) {
        child.kill(SIGTERM)
        _ = child.waitForExit()
    }

    @Test func theDefaultPairIsLarderAndLarderSecret() throws {
        try PythonRunner.require([("boto3", "boto3")])
        let (child, port) = try Self.start()
        defer { Self.stop(child) }
        #expect(try Self.listBuckets(port: port, key: "larder", secret: "larder-secret") == "ok")
        #expect(try Self.listBuckets(port: port, key: "larder", secret: "nope") == "SignatureDoesNotMatch")
    }

    @Test func theEnvironmentsPairReplacesTheDefault() throws {
        try PythonRunner.require([("boto3", "boto3")])
        let (child, port) = try Self.start(environment: ["LARDER_S3_ACCESS_KEY": "ci-key", "LARDER_S3_SECRET_KEY": "ci-secret"])
        defer { Self.stop(child) }
        #expect(try Self.listBuckets(port: port, key: "ci-key", secret: "ci-secret") == "ok")
        #expect(try Self.listBuckets(port: port, key: "larder", secret: "larder-secret") == "InvalidAccessKeyId")
    }

    @Test func aCredentialsFileGivesEveryKeyInIt() throws {
        try PythonRunner.require([("boto3", "boto3")])
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/keys"
        try "# workers\nworker-1 secret-1\n\nworker-2\tsecret-2\n".write(toFile: file, atomically: true, encoding: .utf8)
        let (child, port) = try Self.start(["--s3-credentials", file])
        defer { Self.stop(child) }
        #expect(try Self.listBuckets(port: port, key: "worker-1", secret: "secret-1") == "ok")
        #expect(try Self.listBuckets(port: port, key: "worker-2", secret: "secret-2") == "ok")
        #expect(try Self.listBuckets(port: port, key: "worker-2", secret: "secret-1") == "SignatureDoesNotMatch")
    }

    @Test func aKeyBoundToABadNamespaceNameIsRefusedAtStart() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/keys"
        try "worker-1 secret-1 w1\nworker-2 secret-2 bad/name\n".write(toFile: file, atomically: true, encoding: .utf8)
        let child = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--s3-port", "0", "--s3-credentials", file],
                                    waitUntilListening: false)
        #expect(child.waitForExit() != 0)
        #expect(child.log.contains("S3 access key worker-2: 'bad/name' is not a namespace name"), "\(child.log)")
    }

    @Test func halfAPairIsRefused() throws {
        let child = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--s3-port", "0"],
                                    environment: ["LARDER_S3_ACCESS_KEY": "only-the-key"], waitUntilListening: false)
        #expect(child.waitForExit() != 0)
        #expect(child.log.contains("set both LARDER_S3_ACCESS_KEY and LARDER_S3_SECRET_KEY, or neither"), "\(child.log)")
    }

    @Test func credentialsFilesAreParsed() throws {
        let parsed = try S3Credentials.parse(file: "a sa\n  # c\nb sb  \n", path: "f")
        #expect(parsed.keys == ["a": "sa", "b": "sb"])
        #expect(parsed.namespaces.isEmpty)
        let bound = try S3Credentials.parse(file: "a sa w1\nb sb\n", path: "f")
        #expect(bound.keys == ["a": "sa", "b": "sb"])
        #expect(bound.namespace(for: "a") == "w1" && bound.namespace(for: "b") == nil)
        #expect(throws: S3CredentialsError.self) { try S3Credentials.parse(file: "a sa w1 extra\n", path: "f") }
        #expect(throws: S3CredentialsError.self) { try S3Credentials.parse(file: "a sa\na sb\n", path: "f") }
        #expect(throws: S3CredentialsError.self) { try S3Credentials.parse(file: "only-one-field\n", path: "f") }
        #expect(throws: S3CredentialsError.self) { try S3Credentials.parse(file: "# nothing\n", path: "f") }
    }
}
