import Dispatch
import LarderBackends
import LarderDiskStore
import LarderServer
import LarderStorage
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing

/// A namespace made again by a request that comes while it is being
/// dropped starts empty: the drop moves the old data out of the name's way
/// before any request can open the name again (`Namespaces`' lock order).
/// The disk store's real namespaces, with the drop held open at its start.
@Suite(.blockingLane) struct NamespaceDropTests {
    /// The disk store's namespaces, whose next `drop` (once armed) signals
    /// `entered` and waits for `release` before it does anything.
    final class HeldDrops: NamespaceStores, @unchecked Sendable {
        let inner: DiskNamespaceStores
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let armed = Locked(false)

        init(_ inner: DiskNamespaceStores) { self.inner = inner }

        func existing() throws -> [String] { try inner.existing() }
        func open(_ name: String, changes: StoreChangeObserver, logger: Logger) throws -> any ValueStore {
            try inner.open(name, changes: changes, logger: logger)
        }
        func drop(_ name: String, store: any ValueStore, logger: Logger) {
            let wasArmed = armed.withLock { armed -> Bool in
                defer { armed = false }
                return armed
            }
            if wasArmed {
                entered.signal()
                release.wait()
            }
            inner.drop(name, store: store, logger: logger)
        }
        func close() { inner.close() }
    }

    @Test func aNameMadeAgainWhileItIsDroppedNeverSeesTheOldData() throws {
        let directory = TestServer.makeTempDirectory()
        let held = HeldDrops(DiskNamespaceStores(options: DiskStoreOptions(dataDirectory: directory, fsync: false), fixtures: nil))
        let server = try TestServer(dataDirectory: directory) { $0.namespaceStores = held }
        defer { server.stop() }
        let port = server.port
        @Sendable func namespace() -> WireClient {
            let client = WireClient(port: port)
            client.basePath = "/ns/a"
            return client
        }
        #expect(try namespace().put("k", "old").status == 201)
        held.armed.withLock { $0 = true }
        let dropping = Background { try WireClient(port: port).send("DELETE", "/ns/a").status }
        #expect(held.entered.wait(timeout: .now() + Poll.patience) == .success, "the drop never began")
        let remade = Background { try namespace().put("new", "after").status }
        // The request's chance to run into the drop: it waits for it (or, if
        // the name were free already, would open the old data now).
        let early = try? remade.wait(1)
        held.release.signal()
        #expect(try dropping.wait() == 204)
        #expect(try early ?? remade.wait() == 201)
        #expect(try namespace().get("k").status == 404, "the old namespace's key is visible in the new one")
        #expect(try namespace().get("new").text == "after")
    }
}
