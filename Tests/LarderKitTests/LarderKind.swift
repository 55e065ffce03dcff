import Foundation
import LarderClient
import LarderEmbedded
import LarderTestSupport

/// The two implementations of `Larder` that every conformance test runs
/// against: the behaviour must not depend on which one an app picked.
enum LarderKind: String, CaseIterable, CustomStringConvertible, Sendable {
    /// `EmbeddedLarder` on a fresh temp directory: no server.
    case embedded
    /// `LarderClient` over HTTP to a fresh in-process `TestServer`.
    case http

    var description: String { rawValue }
}

/// A fresh, empty store of one kind, and what a test needs around it: the
/// server (http only) for raw `WireClient` writes, and a second handle on the
/// same store to play "another writer".
final class KitStore: @unchecked Sendable {
    let kind: LarderKind
    let larder: any Larder
    /// The in-process server behind `larder` (http only).
    let server: TestServer?
    private let directory: String?
    private let embedded: EmbeddedLarder?

    init(_ kind: LarderKind) throws {
        self.kind = kind
        switch kind {
        case .embedded:
            let directory = TestServer.makeTempDirectory()
            // No fsync: durability has its own tests, and this suite writes thousands of keys.
            let embedded = try EmbeddedLarder(directory: URL(fileURLWithPath: directory), fsync: false)
            self.directory = directory
            self.embedded = embedded
            self.larder = embedded
            self.server = nil
        case .http:
            let server = try TestServer()
            self.server = server
            self.directory = nil
            self.embedded = nil
            self.larder = LarderClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!)
        }
    }

    /// Another client of the same store, as a second writer would hold it:
    /// the same embedded instance (one process may open a directory once), or
    /// a second `LarderClient` with its own connections.
    func otherWriter() -> any Larder {
        switch kind {
        case .embedded: larder
        case .http: LarderClient(baseURL: URL(string: "http://127.0.0.1:\(server!.port)")!)
        }
    }

    /// Closes the store and removes its files.
    func close() {
        embedded?.close()
        server?.stop()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    deinit { close() }
}

/// Runs `body` with a fresh store of `kind`, closing it after (also on failure).
func withKitStore<T>(_ kind: LarderKind, _ body: (KitStore) async throws -> T) async throws -> T {
    let store = try KitStore(kind)
    defer { store.close() }
    return try await body(store)
}
