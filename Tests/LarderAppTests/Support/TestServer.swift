import Foundation
import LarderApp
import LarderWire
import LarderHTTP
import LarderSupport
import LarderStore

/// A real Larder server in this process: real sockets on an ephemeral
/// loopback port, a fresh temp data directory, the real disk store.
final class TestServer {
    let server: LarderServer
    let dataDirectory: String
    var port: Int { server.port }
    private var stopped = false

    /// `configure` may change anything; the defaults are port 0, a temp
    /// directory, no fsync (durability has its own tests) and no logging.
    init(dataDirectory: String? = nil, _ configure: (inout LarderConfiguration) -> Void = { _ in }) throws {
        let dir = dataDirectory ?? TestServer.makeTempDirectory()
        self.dataDirectory = dir
        var config = LarderConfiguration(dataDirectory: dir)
        config.http.port = 0
        config.store.fsync = false
        config.logLevel = .critical
        configure(&config)
        let logger = ProcessInfo.processInfo.environment["LARDER_TEST_LOG"] != nil
            ? Logger(label: "test", level: .debug) : Logger.silent()
        server = try LarderServer(configuration: config, logger: logger)
        try server.start()
    }

    static func makeTempDirectory() -> String {
        let path = NSTemporaryDirectory() + "larder-test-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func client() -> WireClient { WireClient(port: port) }

    /// Waits until `/metrics` says the store's start-up scan is done
    /// (`larder_store_index_ready 1`): totals exact, stale temp files gone.
    func waitForIndex(timeout: Double = 60) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try client().send("GET", "/metrics").text.contains("\nlarder_store_index_ready 1\n") { return }
            usleep(10_000)
        }
        struct IndexNotReady: Error {}
        throw IndexNotReady()
    }

    func connection(timeout: Double = 30) throws -> HTTPClientConnection {
        try HTTPClientConnection(port: port, timeout: timeout)
    }

    /// Stops the server; keeps the data directory when `keepData` (restarts).
    func stop(keepData: Bool = false) {
        guard !stopped else { return }
        stopped = true
        server.shutdown()
        if !keepData { try? FileManager.default.removeItem(atPath: dataDirectory) }
    }

    deinit { stop() }
}
