import Foundation
import LarderSharing
import LarderDiskStore
import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// A real `DiskStore` on a fresh temp directory, reporting its changes to
/// a `ChangeHub`: what both faces build, without either face.
final class SharedStore: @unchecked Sendable {
    let directory: String
    let hub: ChangeHub
    let store: DiskStore

    init(historySize: Int = 64) throws {
        directory = NSTemporaryDirectory() + "larder-sharing-" + UUID().uuidString
        hub = ChangeHub(historySize: historySize)
        store = try DiskStore(options: DiskStoreOptions(dataDirectory: directory, fsync: false), changes: hub)
    }

    deinit {
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    @discardableResult
    func put(_ key: String, _ text: String, type: String = "text/plain") throws -> PutOutcome {
        let upload = try store.beginUpload(key: try StoreKey(key), contentType: type, encoding: .identity)
        try Array(text.utf8).withUnsafeBytes { try upload.write($0) }
        return try upload.finish().get()
    }

    func text(_ key: String) throws -> String {
        let value = try store.open(try StoreKey(key)).get()
        defer { value.close() }
        return String(decoding: try value.readAll(), as: UTF8.self)
    }

    /// Waits up to `seconds` for `condition`; whether it came true.
    static func poll(_ seconds: Double = 5, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(2_000)
        }
        return condition()
    }

    /// The process's thread count (Linux `/proc/self/status`), nil elsewhere.
    static func threadCount() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("Threads:") {
            return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}

/// A subscriber with a buffer of `capacity` events that nobody drains:
/// records what it took and how it ended.
final class Collector: ChangeSubscriber, @unchecked Sendable {
    let capacity: Int
    let receivesInline: Bool
    private let lock = NSLock()
    private var taken: [ChangeHub.Event] = []
    private var ending: ChangeSubscriberEnd?
    private var ends = 0
    private var keepAlives = 0
    private var resetIDs: [String] = []

    init(capacity: Int = .max, inline: Bool) {
        self.capacity = capacity
        self.receivesInline = inline
    }

    func receive(_ event: ChangeHub.Event) -> Bool {
        lock.withLock {
            guard taken.count < capacity else { return false }
            taken.append(event)
            return true
        }
    }

    func end(_ reason: ChangeSubscriberEnd) {
        lock.withLock { ending = reason; ends += 1 }
    }

    func keepAlive() { lock.withLock { keepAlives += 1 } }

    func receiveReset(id: String) -> Bool { lock.withLock { resetIDs.append(id); return true } }
    /// The ids of the resets taken instead of a replay.
    var resets: [String] { lock.withLock { resetIDs } }

    var events: [ChangeHub.Event] { lock.withLock { taken } }
    var keys: [String?] { events.map(\.change.key) }
    var ended: (reason: ChangeSubscriberEnd?, times: Int) { lock.withLock { (ending, ends) } }
    var keepAliveCount: Int { lock.withLock { keepAlives } }
}
