import LarderStorage
import LarderValueFile
import Testing

/// `ChangeHistory`: the ring of recent changes behind "replay after event
/// id": what comes after an id, by prefix; nil when something after it
/// may have been forgotten.
@Suite struct ChangeHistoryTests {
    static func put(_ key: String, _ version: UInt64) -> StoreChange {
        .put(ValueMetadata(key: key, contentType: "text/plain", size: 1, version: version, modifiedNanos: 0))
    }

    static func keys(_ entries: [ChangeHistory.Entry]?) -> [String]? {
        entries.map { $0.map { $0.change.key ?? "prefix:" + ($0.change.prefix ?? "") } }
    }

    @Test func recordNumbersChangesFromOneAndNamesTheNewest() {
        var history = ChangeHistory(capacity: 4)
        #expect(history.lastSequence == 0)
        #expect(history.newestID == nil)
        let first = history.record(Self.put("a", 10))
        let second = history.record(Self.put("b", 11))
        #expect(first.sequence == 1 && second.sequence == 2)
        #expect(second.id == "000000000000000b", "the version in 16 hex digits")
        #expect(history.newestID == second.id)
        #expect(history.lastSequence == 2)
    }

    @Test func replayGivesWhatCameAfterAnIdForThePrefixOldestFirst() {
        var history = ChangeHistory(capacity: 8)
        let a = history.record(Self.put("users/1", 1))
        _ = history.record(Self.put("docs/x", 2))
        _ = history.record(Self.put("users/2", 3))
        _ = history.record(.deletePrefix("users/", deleted: 2, version: 4))
        _ = history.record(.deletePrefix("", deleted: 5, version: 5))
        #expect(Self.keys(history.replay(after: a.id, concerning: "")) == ["docs/x", "users/2", "prefix:users/", "prefix:"])
        #expect(Self.keys(history.replay(after: a.id, concerning: "users/")) == ["users/2", "prefix:users/", "prefix:"])
        #expect(Self.keys(history.replay(after: a.id, concerning: "docs/")) == ["docs/x", "prefix:"])
        #expect(Self.keys(history.replay(after: history.newestID!, concerning: "")) == [])
    }

    @Test func anIdThatFellOutOfTheRingIsNil() {
        var history = ChangeHistory(capacity: 3)
        let first = history.record(Self.put("k1", 1))
        let oldestKept = history.record(Self.put("k2", 2))
        for version in 3...4 { _ = history.record(Self.put("k\(version)", UInt64(version))) }
        #expect(history.replay(after: first.id, concerning: "") == nil, "the change after it was forgotten")
        // The oldest still kept: the two after it, in order, across the ring's wrap.
        #expect(Self.keys(history.replay(after: oldestKept.id, concerning: "")) == ["k3", "k4"])
        #expect(history.lastSequence == 4)
    }

    @Test func anUnknownIdAtOrPastTheNewestMissesNothingAndAnOlderOneIsNil() {
        var history = ChangeHistory(capacity: 4)
        _ = history.record(Self.put("a", 0x10))
        _ = history.record(Self.put("b", 0x20))
        #expect(Self.keys(history.replay(after: "0000000000000020", concerning: "")) == [], "the newest itself")
        #expect(Self.keys(history.replay(after: "0000000000000030", concerning: "")) == [], "from the future: nothing to replay")
        #expect(history.replay(after: "0000000000000015", concerning: "") == nil, "between two kept ids: unknown")
        #expect(history.replay(after: "0000000000000001", concerning: "") == nil, "from before the history began")
        #expect(history.replay(after: "not-hex", concerning: "") == nil)
    }

    @Test func forgetMakesEveryEarlierIdUnknownButKeepsCounting() {
        var history = ChangeHistory(capacity: 4)
        let a = history.record(Self.put("a", 1))
        history.forget()
        #expect(history.newestID == nil)
        #expect(history.replay(after: a.id, concerning: "") == nil, "an empty history cannot say what came after")
        let b = history.record(Self.put("b", 2))
        #expect(b.sequence == 2, "sequences never repeat")
        #expect(history.replay(after: a.id, concerning: "") == nil)
        #expect(Self.keys(history.replay(after: b.id, concerning: "")) == [])
    }

    @Test func aCapacityBelowOneKeepsOne() {
        var history = ChangeHistory(capacity: 0)
        #expect(history.capacity == 1)
        let a = history.record(Self.put("a", 1))
        let b = history.record(Self.put("b", 2))
        #expect(history.newestID == b.id)
        #expect(history.replay(after: a.id, concerning: "") == nil)
    }
}
