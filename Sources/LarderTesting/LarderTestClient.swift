import Foundation
import LarderBackends
import LarderDiskStore
import LarderHTTP
import LarderServer
import LarderSupport

/// Larder's routes and middleware in this process, with no socket: a
/// request goes through the real route table, middleware chain, store and
/// namespaces of a `LarderServer` that never listens, and its answer comes
/// back as the connection would have sent it (`HTTPInProcessExchange`). In
/// the spirit of HummingbirdTesting's router tester: route-level tests
/// without ports, sockets or child processes.
///
/// What needs a socket is not here: keep-alive, framing, the network
/// faults (an answer says which one it would have had), slow and hostile
/// clients, the S3 listener. Test those over a real listener.
///
/// ```swift
/// let larder = try LarderTestClient()
/// defer { larder.shutdown() }
/// let put = await larder.execute("PUT", "/store/a", body: Array("hi".utf8))
/// #expect(put.status == 201)
/// #expect(await larder.execute("GET", "/store/a").text == "hi")
/// ```
public final class LarderTestClient: Sendable {
    /// What the server is told, as `larder serve`'s flags say it.
    public struct Options: Sendable {
        /// `--token`.
        public var token: String?
        /// `--allow-faults`.
        public var allowFaults: Bool
        /// `--cors-origin`.
        public var corsOrigins: [String]
        /// `--journal` (0: none).
        public var journal: Int
        /// `--max-value-size`, in bytes.
        public var maxValueBytes: Int64

        public init(token: String? = nil, allowFaults: Bool = false, corsOrigins: [String] = [], journal: Int = 1000,
                    maxValueBytes: Int64 = 64 << 20) {
            self.token = token
            self.allowFaults = allowFaults
            self.corsOrigins = corsOrigins
            self.journal = journal
            self.maxValueBytes = maxValueBytes
        }
    }

    /// The server it sends to (the package's tests read its counts).
    package let server: LarderServer
    /// The data directory made for it (removed by `shutdown`); nil: the caller's store.
    private let directory: String?

    /// A Larder on a fresh disk store in a temporary directory, with namespaces.
    public convenience init(_ options: Options = Options()) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("larder-testing-\(UUID().uuidString)").path
        var disk = DiskStoreOptions(dataDirectory: directory, fsync: false)
        disk.maxValueSize = options.maxValueBytes
        let stores = StoreChoice(disk: disk).stores()
        var configuration = LarderConfiguration(storeDescription: directory, openStore: stores.factory)
        configuration.namespaceStores = stores.namespaces
        configuration.http.maxBodyBytes = options.maxValueBytes
        configuration.token = options.token
        configuration.allowFaults = options.allowFaults
        configuration.corsOrigins = options.corsOrigins
        configuration.journal = options.journal
        try self.init(configuration: configuration, removing: directory)
    }

    /// A Larder made from a configuration (the package's own tests: any
    /// store, any middleware). `removing`: a directory `shutdown` deletes.
    package init(configuration: LarderConfiguration, removing directory: String? = nil) throws {
        server = try LarderServer(configuration: configuration, logger: .silent(label: "larder.testing"))
        self.directory = directory
    }

    /// Sends one request through the server's route table and middleware
    /// and returns its answer. `path` is the request target (`/store/a?wait=5`);
    /// `Host` and, with a body, `Content-Length` are added unless given.
    public func execute(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) async -> TestResponse {
        var head = "\(method) \(path) HTTP/1.1\r\n"
        let names = Set(headers.map { $0.0.lowercased() })
        if !names.contains("host") { head += "Host: larder.test\r\n" }
        if !names.contains("content-length"), !names.contains("transfer-encoding"), !body.isEmpty || ["PUT", "POST", "PATCH"].contains(method) {
            head += "Content-Length: \(body.count)\r\n"
        }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        let answer = await HTTPInProcessExchange.serve(head: Array(head.utf8), body: body, to: server.api.table,
                                                       configuration: server.configuration.http)
        return TestResponse(status: answer.status.code, reason: answer.status.reason, headers: answer.headers, body: answer.body,
                            networkFault: answer.networkFault.map { "\($0)" })
    }

    /// Closes the store (and deletes the temporary directory it made).
    public func shutdown() {
        server.shutdown()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }
}
