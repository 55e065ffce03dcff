import Foundation
import LarderSharing
import LarderDiskStore
import LarderStorage
import LarderTestSupport
import LarderValueFile
import Testing
import LarderStoreVocabulary

/// The one change fan-out both faces use, on a real disk store: bounded
/// buffers, replay by event id, prefixes, closing.
@Suite(.blockingLane) struct ChangeHubTests {
    /// Forty subscribers (inline and queued) all get every change in order;
    /// the one whose buffer holds three is let go with `.fellBehind` after
    /// three, and the writes did not wait for it.
    @Test func fanOutToManySubscribersWithBoundedBuffers() throws {
        let shared = try SharedStore()
        let readers = (0..<40).map { Collector(inline: $0 % 2 == 0) }
        let slow = Collector(capacity: 3, inline: true)
        let slowQueued = Collector(capacity: 3, inline: false)
        for s in readers + [slow, slowQueued] {
            #expect(shared.hub.subscribe(s, prefix: "f/", after: nil) != nil)
        }
        #expect(shared.hub.subscriberCount == 42)
        for n in 0..<10 { try shared.put("f/\(n)", "\(n)") }
        try shared.put("other/x", "not under f/")

        let want = (0..<10).map { Optional("f/\($0)") }
        #expect(SharedStore.poll { readers.allSatisfy { $0.events.count == 10 } })
        for r in readers {
            #expect(r.keys == want)
            #expect(r.events.map(\.sequence) == r.events.map(\.sequence).sorted())
        }
        // An inline subscriber took each change before `put` returned.
        #expect(slow.keys == Array(want.prefix(3)))
        #expect(slow.ended.reason == .fellBehind && slow.ended.times == 1)
        #expect(SharedStore.poll { slowQueued.ended.times == 1 })
        #expect(slowQueued.keys == Array(want.prefix(3)))
        #expect(slowQueued.ended.reason == .fellBehind)
        #expect(shared.hub.subscriberCount == 40)
    }

    /// Replay after an event id gives exactly the later changes under the
    /// prefix; an id the bounded ring no longer holds gives a reset, naming
    /// the newest id, then live changes; an id at or past the newest, nothing.
    @Test func replayIsBoundedByTheRing() throws {
        let shared = try SharedStore(historySize: 8)
        let first = Collector(inline: true)
        _ = shared.hub.subscribe(first, prefix: "", after: nil)
        for n in 0..<20 { try shared.put("r/\(n)", "\(n)") }
        let ids = first.events.map(\.id)
        #expect(ids.count == 20)

        let resumed = Collector(inline: true)
        _ = shared.hub.subscribe(resumed, prefix: "r/", after: ids[15])
        #expect(resumed.keys == ["r/16", "r/17", "r/18", "r/19"])

        let tooOld = Collector(inline: false)
        _ = shared.hub.subscribe(tooOld, prefix: "r/", after: ids[2])
        #expect(tooOld.resets == [ids[19]])
        #expect(tooOld.events.isEmpty)
        let current = Collector(inline: true)
        _ = shared.hub.subscribe(current, prefix: "r/", after: "ffffffffffffffff")
        #expect(current.resets.isEmpty && current.events.isEmpty)
        // Live changes follow the replay (or the reset), none repeated.
        try shared.put("r/20", "20")
        #expect(SharedStore.poll { tooOld.events.count == 1 })
        #expect(tooOld.keys == ["r/20"])
        #expect(resumed.keys.last == "r/20")
        #expect(SharedStore.poll { current.keys == ["r/20"] })
    }

    /// A change that follows a gap (the PostgreSQL feed fell behind the
    /// database's trim) reaches every subscriber, whatever its prefix and
    /// mode, as one reset with its id; every watcher looks again; the ring
    /// forgets what came before, so resuming after an older id is a reset,
    /// while resuming after the reset's id replays what followed it.
    @Test func aChangeAfterAGapResetsEverySubscriberAndForgetsTheRing() throws {
        let shared = try SharedStore(historySize: 100)
        let underA = Collector(inline: true), underB = Collector(inline: false), everything = Collector(inline: true)
        _ = shared.hub.subscribe(underA, prefix: "a/", after: nil)
        _ = shared.hub.subscribe(underB, prefix: "b/", after: nil)
        _ = shared.hub.subscribe(everything, prefix: "", after: nil)
        let woken = Counter()
        _ = shared.hub.watch("c/watched") { woken.add() }
        for n in 0..<5 { try shared.put("a/\(n)", "\(n)") }
        let before = try #require(everything.events.last)

        var change = StoreChange.put(ValueMetadata(key: "a/after-gap", contentType: "", size: 1,
                                                   version: before.change.version + 1_000, modifiedNanos: 0))
        change.followsGap = true
        shared.hub.storeDidChange(change)

        #expect(SharedStore.poll { underB.resets.count == 1 && woken.value == 1 })
        for collector in [underA, underB, everything] {
            #expect(collector.resets == [change.id])
            #expect(!collector.keys.contains("a/after-gap"), "the change itself was given besides the reset")
        }
        let old = Collector(inline: true)
        _ = shared.hub.subscribe(old, prefix: "", after: before.id)
        #expect(old.resets == [change.id] && old.events.isEmpty, "an id from before the gap was replayed from")
        try shared.put("a/later", "x")
        let resumed = Collector(inline: true)
        _ = shared.hub.subscribe(resumed, prefix: "", after: change.id)
        #expect(resumed.resets.isEmpty && resumed.keys == ["a/later"])
        #expect(everything.keys.last == "a/later" && everything.resets.count == 1)
    }

    /// A replay larger than the subscriber's buffer ends it at once.
    @Test func aReplayThatDoesNotFitEndsTheSubscriber() throws {
        let shared = try SharedStore()
        let first = Collector(inline: true)
        let firstID = try #require(shared.hub.subscribe(first, prefix: "", after: nil))
        for n in 0..<5 { try shared.put("k/\(n)", "\(n)") }
        shared.hub.unsubscribe(firstID)
        let small = Collector(capacity: 2, inline: true)
        #expect(shared.hub.subscribe(small, prefix: "", after: try #require(first.events.first?.id)) == nil)
        #expect(small.events.count == 2)
        #expect(small.ended.reason == .fellBehind)
        #expect(shared.hub.subscriberCount == 0)
    }

    @Test func aBulkDeleteReachesOverlappingPrefixes() throws {
        let shared = try SharedStore()
        try shared.put("a/b/1", "1")
        try shared.put("a/c/1", "1")
        let inner = Collector(inline: true), outer = Collector(inline: true), aside = Collector(inline: true)
        _ = shared.hub.subscribe(inner, prefix: "a/b/x", after: nil)
        _ = shared.hub.subscribe(outer, prefix: "", after: nil)
        _ = shared.hub.subscribe(aside, prefix: "z/", after: nil)
        #expect(try shared.store.deletePrefix(StorePrefix(bytes: Array("a/".utf8))).get() == 2)
        #expect(inner.events.count == 1 && inner.events.first?.change.prefix == "a/")
        #expect(outer.events.count == 1 && outer.events.first?.change.deleted == 2)
        #expect(aside.events.isEmpty)
    }

    /// Closing ends every subscriber once with `.closed`, wakes every
    /// watcher, and refuses newcomers.
    @Test func closingEndsSubscribersAndWakesWatchers() throws {
        let shared = try SharedStore()
        let s = Collector(inline: true)
        _ = shared.hub.subscribe(s, prefix: "", after: nil)
        let woken = Counter()
        #expect(shared.hub.watch("k", { woken.add() }) != nil)
        shared.hub.close()
        #expect(SharedStore.poll { s.ended.times == 1 && woken.value == 1 })
        #expect(s.ended.reason == .closed)
        #expect(shared.hub.watcherCount == 0 && shared.hub.subscriberCount == 0)
        #expect(shared.hub.watch("k", {}) == nil)
        let late = Collector(inline: true)
        #expect(shared.hub.subscribe(late, prefix: "", after: nil) == nil)
        #expect(late.ended.reason == .closed)
    }

    /// The keep-alive tick reaches every subscriber while nothing changes.
    @Test func keepAliveTicksEverySubscriber() throws {
        let hub = ChangeHub(historySize: 4, keepAliveEvery: 0.05)
        let a = Collector(inline: true), b = Collector(inline: false)
        _ = hub.subscribe(a, prefix: "", after: nil)
        _ = hub.subscribe(b, prefix: "x/", after: nil)
        #expect(SharedStore.poll { a.keepAliveCount >= 2 && b.keepAliveCount >= 2 })
        hub.close()
    }
}

/// A counter for closures the hub calls from its queue.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
