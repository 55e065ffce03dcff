import Dispatch
import Foundation
import LarderSharing
import LarderDiskStore
import LarderStorage
import LarderTestSupport
import LarderValueFile
import Testing
import LarderStoreVocabulary

/// The one key watch both faces use, on a real disk store: looks after
/// each change, parked without a thread, ended by its owner or by a look.
@Suite(.blockingLane) struct KeyWatchTests {
    /// What a watch's looks saw: the value's text, or "absent".
    final class Looks: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [String] = []
        /// The look that decides the watch is over, by content.
        let doneAt: String?
        init(doneAt: String? = nil) { self.doneAt = doneAt }

        func look(_ opened: Result<StoredValue, any Error>) -> KeyWatch.Verdict {
            let text: String
            switch opened {
            case .success(let value):
                text = String(decoding: (try? value.readAll()) ?? [], as: UTF8.self)
                value.close()
            case .failure:
                text = "absent"
            }
            lock.withLock { seen.append(text) }
            return text == doneAt ? .done : .waiting
        }

        var all: [String] { lock.withLock { seen } }
    }

    static func watch(_ shared: SharedStore, _ key: String, _ looks: Looks, queue: DispatchQueue? = nil,
                      hubClosed: @escaping @Sendable () -> Void = {}) throws -> KeyWatch {
        let watch = KeyWatch(key: try StoreKey(key), store: shared.store, hub: shared.hub, queue: queue,
                             hubClosed: hubClosed) { looks.look($0) }
        watch.start()
        return watch
    }

    /// Parked between looks, the watch sees each version the key takes,
    /// a delete (absent) and a bulk delete over it, in order.
    @Test func aParkedWatchLooksAgainAtEveryChange() throws {
        let shared = try SharedStore()
        try shared.put("cfg/a", "v1")
        let looks = Looks()
        let watch = try Self.watch(shared, "cfg/a", looks)
        defer { watch.end() }
        // Without a queue the first look ran inside `start`.
        #expect(looks.all == ["v1"])
        #expect(shared.hub.watcherCount == 1)
        try shared.put("cfg/a", "v2")
        #expect(SharedStore.poll { looks.all.count == 2 })
        try shared.put("cfg/other", "x")
        _ = try shared.store.delete(StoreKey("cfg/a")).get()
        #expect(SharedStore.poll { looks.all.count == 3 })
        try shared.put("cfg/a", "v3")
        #expect(SharedStore.poll { looks.all.count == 4 })
        _ = try shared.store.deletePrefix(StorePrefix(bytes: Array("cfg/".utf8))).get()
        #expect(SharedStore.poll { looks.all.count == 5 })
        #expect(looks.all == ["v1", "v2", "absent", "v3", "absent"])
        #expect(shared.hub.watcherCount == 1)
    }

    /// A watch whose owner's deadline passes (the face ends it) leaves no
    /// watcher behind and looks no more.
    @Test func aWatchThatTimesOutLooksNoMore() throws {
        let shared = try SharedStore()
        let looks = Looks()
        let watch = try Self.watch(shared, "t", looks)
        #expect(looks.all == ["absent"])
        let timedOut = DispatchSemaphore(value: 0)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) {
            watch.end()
            timedOut.signal()
        }
        timedOut.wait()
        #expect(watch.isFinished)
        #expect(shared.hub.watcherCount == 0)
        try shared.put("t", "late")
        usleep(100_000)
        #expect(looks.all == ["absent"])
    }

    /// A look that says `.done` ends the watch (a `?wait` answered).
    @Test func aLookThatIsDoneEndsTheWatch() throws {
        let shared = try SharedStore()
        let looks = Looks(doneAt: "ready")
        let watch = try Self.watch(shared, "job", looks)
        try shared.put("job", "running")
        #expect(SharedStore.poll { looks.all.count == 2 })
        try shared.put("job", "ready")
        #expect(SharedStore.poll { watch.isFinished })
        #expect(shared.hub.watcherCount == 0)
        try shared.put("job", "again")
        usleep(100_000)
        #expect(looks.all == ["absent", "running", "ready"])
    }

    /// With a queue, looks run there in order; changes made while one is
    /// queued fold into it, and the last look sees the last version.
    @Test func queuedLooksAreOrderedAndSeeTheLastVersion() throws {
        let shared = try SharedStore()
        let looks = Looks()
        let queue = DispatchQueue(label: "test.watch", target: .global())
        let watch = try Self.watch(shared, "n", looks, queue: queue)
        defer { watch.end() }
        #expect(SharedStore.poll { looks.all == ["absent"] })
        for n in 1...200 { try shared.put("n", "\(n)") }
        #expect(SharedStore.poll { looks.all.last == "200" })
        let numbers = looks.all.dropFirst().compactMap { Int($0) }
        #expect(numbers == numbers.sorted())
        #expect(numbers.count <= 200)
    }

    /// A thousand parked watches cost watcher entries, not threads; one put
    /// wakes them all.
    @Test func aThousandParkedWatchesHoldNoThreads() throws {
        let shared = try SharedStore()
        try shared.put("hot", "0")
        let before = SharedStore.threadCount()
        let looks = (0..<1000).map { _ in Looks() }
        let watches = try looks.map { try Self.watch(shared, "hot", $0) }
        defer { watches.forEach { $0.end() } }
        #expect(shared.hub.watcherCount == 1000)
        if let before, let after = SharedStore.threadCount() {
            #expect(after - before < 50, "threads: \(before) before, \(after) with 1000 watches parked")
        }
        try shared.put("hot", "1")
        #expect(SharedStore.poll { looks.allSatisfy { $0.all == ["0", "1"] } })
    }

    /// When the hub closes (the embedded store closing), a parked watch is
    /// told once and looks no more; one started after is told at once.
    @Test func aClosingHubEndsParkedWatches() throws {
        let shared = try SharedStore()
        let looks = Looks()
        let told = Counter()
        let watch = try Self.watch(shared, "k", looks) { told.add() }
        shared.hub.close()
        #expect(SharedStore.poll { told.value == 1 })
        #expect(watch.isFinished)
        let lateTold = Counter()
        let late = try Self.watch(shared, "k", Looks()) { lateTold.add() }
        #expect(lateTold.value == 1 && late.isFinished)
        #expect(looks.all == ["absent"])
    }
}
