import Foundation
import LarderPostgres
import LarderStorage
import LarderSupport
import LarderTestSupport
import LarderValueFile
import LarderWire
import LarderStoreVocabulary

/// What the restore tests share: `PostgresStore`s opened straight on a
/// database (no HTTP in between: the route still applies values one by
/// one), each telling a recorder of its changes, and small blocking
/// helpers to write, stage, list and read.
final class RestoreRig {
    let database: TestPostgres
    let schema: String
    var options: PostgresStoreOptions
    private var opened: [PostgresStore] = []

    /// A schema of its own on `database`.
    init(database: TestPostgres, configure: (inout PostgresStoreOptions) -> Void = { _ in }) throws {
        self.database = database
        schema = TestPostgres.makeSchemaName()
        options = try PostgresStoreOptions(url: database.url(schema: schema))
        configure(&options)
    }

    deinit { opened.forEach { $0.close() } }

    /// A store (a server, as far as the database is concerned) on the schema.
    func open(_ recorder: ChangeRecorder? = nil) throws -> PostgresStore {
        let store = try PostgresStore(options: options, changes: recorder)
        opened.append(store)
        return store
    }

    static func put(_ store: any ValueStore, _ key: String, _ value: [UInt8], attributes: [UInt8]? = nil) throws -> PutOutcome {
        let writer = try store.beginUpload(key: StoreKey(key), contentType: "application/octet-stream", encoding: .identity,
                                           expiresNanos: nil, condition: nil)
        try fill(writer, value, attributes: attributes)
        return try writer.finish().get()
    }

    /// Stages `values` in order (a key may come twice); the restore is left open.
    static func stage(_ restore: any RestoreTransaction, _ values: [(key: String, value: [UInt8])],
                      attributes: [UInt8]? = nil) throws {
        for (key, value) in values {
            let writer = try restore.stage(key: StoreKey(key), contentType: "application/octet-stream", expiresNanos: nil)
            try fill(writer, value, attributes: attributes)
            _ = try writer.finish().get()
        }
    }

    private static func fill(_ writer: ValueWriter, _ value: [UInt8], attributes: [UInt8]?) throws {
        if let attributes { try writer.setAttributes(attributes) }
        try writer.expect(bytes: Int64(value.count))
        var offset = 0
        // In pieces, as a body comes.
        while offset < value.count {
            let n = min(64 * 1024, value.count - offset)
            try value.withUnsafeBytes { try writer.write(UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + n)])) }
            offset += n
        }
    }

    /// Every value under `prefix`, in one page (one statement: one snapshot).
    static func list(_ store: any ValueStore, _ prefix: String) throws -> [ListedValue] {
        let listing = try store.list(prefix: StorePrefix(bytes: Array(prefix.utf8)), after: nil, limit: 1_000_000,
                                     groupByDirectory: false).get()
        return listing.values
    }

    static func read(_ store: any ValueStore, _ key: String) throws -> (ValueMetadata, [UInt8]) {
        let value = try store.open(StoreKey(key)).get()
        defer { value.close() }
        return (value.metadata, try value.readAll())
    }
}

/// Every change a store's feed delivered, in order.
final class ChangeRecorder: StoreChangeObserver, @unchecked Sendable {
    private let changes = Locked<[StoreChange]>([])

    func storeDidChange(_ change: StoreChange) { changes.withLock { $0.append(change) } }

    var all: [StoreChange] { changes.withLock { $0 } }
    var count: Int { changes.withLock { $0.count } }

    /// The changes after the first `from`, once there are `count` of them,
    /// or once none has come for `timeout` seconds: a feed still delivering
    /// (tens of thousands of changes on a loaded machine) is waited for, a
    /// stalled one is not.
    func changes(after from: Int, count: Int, timeout: Double = Poll.patience) -> [StoreChange] {
        var seen = self.count
        var deadline = Date().addingTimeInterval(timeout)
        while seen < from + count && Date() < deadline {
            usleep(5_000)
            let now = self.count
            if now > seen { (seen, deadline) = (now, Date().addingTimeInterval(timeout)) }
        }
        return Array(all.dropFirst(from))
    }
}
