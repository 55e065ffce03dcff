import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import LarderTestSupport
import Testing

/// The S3 clients people point at a test bucket, against the built
/// `larder` binary run as a user runs it (`larder --ephemeral --s3-port 0`,
/// the default keys of docs/s3.md): the aws CLI (Tests/s3/test_awscli.py),
/// s3fs/fsspec (test_s3fs.py), the MinIO SDK (test_minio.py), s3cmd
/// (test_s3cmd.py) and rclone (test_rclone.py), each a pytest suite in a
/// scratch HOME with no AWS configuration of the machine.
/// What the face does not do yet (keys ending in `/`) is a test there
/// skipped with its reason.
@Suite(.longBlockingLane) struct S3ClientsTests {
    /// Per suite, in the order pytest runs them: the Python modules it
    /// needs, and how many of its tests at least must pass (a suite that
    /// collected fewer has lost tests). The aws CLI's suite goes first: it
    /// forks its commands from the pytest process (test_awscli.py), before
    /// s3fs has started a thread in it.
    static let suites: [(name: String, modules: [(module: String, package: String)], minimumPassed: Int)] = [
        ("awscli", [("awscli", "awscli")], 20),
        ("s3fs", [("s3fs", "s3fs"), ("fsspec", "fsspec")], 13),
        ("minio", [("minio", "minio")], 11),
        ("s3cmd", [("S3", "s3cmd")], 3),
        ("rclone", [], 2),
    ]

    /// The five suites in one pytest run on one server: each one's own
    /// interpreter, imports and server cost more CPU than most of its tests.
    /// Each suite's passes are counted from pytest's summary (`-rA`), so a
    /// suite that lost tests still fails here by its name.
    @Test func theClientSuitesPass() async throws {
        try PythonRunner.require([("pytest", "pytest"), ("boto3", "boto3")] + Self.suites.flatMap(\.modules))
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/rclone"),
                     "rclone is missing: apt-get install rclone (bash Tests/provision.sh installs it)")
        let server = try await S3ChildServer.start()
        defer { server.stop() }
        let home = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let result = try await PythonRunner.run(
            ["-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--rootdir", Repository.path("Tests/s3"),
             "--basetemp", home + "/pytest"] + Self.suites.map { Repository.path("Tests/s3/test_\($0.name).py") },
            environment: S3ChildServer.clientEnvironment(home: home).merging([
                "LARDER_TEST_S3_URL": server.s3URL, "LARDER_TEST_URL": "http://127.0.0.1:\(server.child.port)",
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            ]) { $1 },
            directory: home, timeout: 600)
        let output = result.stdout + result.stderr
        #expect(!result.timedOut, "timed out\n\(output)")
        #expect(result.status == 0, "pytest exited \(result.status)\n\(output)\nserver log:\n\(server.child.log.suffix(4000))")
        for suite in Self.suites {
            let passed = output.matches(of: /PASSED \S*test_(\w+)\.py::/).filter { $0.1 == suite.name }.count
            #expect(passed >= suite.minimumPassed, "\(suite.name): \(passed) passed\n\(output)")
        }
    }

    /// docs/s3.md's aws CLI example, run with bash as written (its
    /// localhost:9000 the S3 listener, localhost:8080 the plain API) in a
    /// fresh directory and HOME: it prints the page's output block, the
    /// listing's dates and times aside.
    @Test func theAWSCLIExamplePrintsWhatDocsS3Says() async throws {
        try PythonRunner.require([("awscli", "awscli")])
        let server = try await S3ChildServer.start()
        defer { server.stop() }
        let home = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let s3Address = try #require(server.s3URL.split(separator: "/").last)
        let script = try DocExample.block("docs/s3.md", "example: aws-cli")
            .replacingOccurrences(of: "localhost:9000", with: String(s3Address))
            .replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(server.child.port)")
        // The `aws` that `pip install awscli` put beside this python3, first on the PATH.
        let scripts = try await PythonRunner.run(["-c", "import sysconfig; print(sysconfig.get_path('scripts'))"])
        let path = scripts.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + ":"
            + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try await ProcessRunner.run("/bin/bash", ["-c", script],
                                                 environment: S3ChildServer.clientEnvironment(home: home).merging(["PATH": path, "TZ": "UTC"]) { $1 },
                                                 directory: home, timeout: 120)
        #expect(result.status == 0, "\(result.stdoutText)\(result.stderr)")
        let expected = try DocExample.block("docs/s3.md", "output: aws-cli")
        #expect(Self.normalized(result.stdoutText) == Self.normalized(expected), "printed:\n\(result.stdoutText)\(result.stderr)")
    }

    /// docs/s3.md's presigned POST example, run with python3 as written
    /// (its localhost:9000 the S3 listener): the upload is 204 and the
    /// object keeps the file part's type.
    @Test func thePresignedPostExampleUploadsAsDocsS3Says() async throws {
        try PythonRunner.require([("boto3", "boto3"), ("urllib3", "urllib3")])
        let server = try await S3ChildServer.start()
        defer { server.stop() }
        let home = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let s3Address = try #require(server.s3URL.split(separator: "/").last)
        let script = try DocExample.block("docs/s3.md", "example: presigned-post")
            .replacingOccurrences(of: "localhost:9000", with: String(s3Address))
        let result = try await PythonRunner.run(["-c", script], environment: S3ChildServer.clientEnvironment(home: home),
                                                timeout: 120)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").map(String.init) == ["204", "image/png"], "printed:\n\(result.stdout)")
    }

    /// `aws s3 ls`'s local date and time made equal.
    static func normalized(_ text: String) -> String {
        DocExample.normalized(text).replacingOccurrences(of: #"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"#, with: "<time>",
                                                         options: .regularExpression)
    }
}

/// `larder serve --ephemeral --s3-port 0` as a child process, and the S3
/// listener's address from the line it logs ("S3 listening on http://…").
struct S3ChildServer: @unchecked Sendable {
    let child: ChildServer
    let s3URL: String

    /// Started off the cooperative pool: starting polls the child's output.
    static func start(arguments: [String] = []) async throws -> S3ChildServer {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try S3ChildServer(arguments: arguments) })
            }
        }
    }

    /// SIGTERM: the server stops as a user's would, and `--ephemeral` takes
    /// its data directory with it. The child is held (its deinit would
    /// SIGKILL a running server, leaving the directory behind) until it has
    /// exited, on a thread of its own.
    func stop() {
        child.kill(SIGTERM)
        DispatchQueue.global().async { [self] in
            child.process.waitUntilExit()
            withExtendedLifetime(self) {}
        }
    }

    init(arguments: [String] = []) throws {
        child = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--s3-port", "0"] + arguments)
        let deadline = Date().addingTimeInterval(10)
        var found: String?
        while found == nil && Date() < deadline {
            if let match = child.log.firstMatch(of: /S3 listening on (http:\/\/[^\s]+)/) {
                found = String(match.1)
            } else {
                usleep(10_000)
            }
        }
        s3URL = try #require(found, "no \"S3 listening on\" line in the log: \(child.log)")
    }

    /// What an S3 client run by a test gets: `home` as HOME, no AWS
    /// configuration or credentials of the machine, no instance metadata
    /// look-ups, no bytecode written into the repository.
    static func clientEnvironment(home: String) -> [String: String] {
        ["HOME": home, "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
         "AWS_EC2_METADATA_DISABLED": "true", "PYTHONDONTWRITEBYTECODE": "1"]
    }
}
