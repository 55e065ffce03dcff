import LarderModel
import LarderStorage
import LarderValueFile
import Testing

/// `StoreListing.merging`: one page of two layers (the store over the
/// fixtures) in byte order, the upper layer winning a key both hold, a
/// common prefix once, and a cursor only when something is left.
@Suite struct StoreListingMergeTests {
    static func value(_ key: String, version: UInt64, source: ValueSource) -> ListedValue {
        var v = ListedValue(key: key, metadata: ValueMetadata(key: key, contentType: "text/plain", size: 1, version: version,
                                                              modifiedNanos: 0), storedSize: 1)
        v.source = source
        return v
    }

    /// A layer's page: `entries` as given (keys, and prefixes ending in `/`).
    static func page(_ entries: [String], source: ValueSource, version: UInt64, next: String? = nil) -> StoreListing {
        var page = StoreListing()
        for entry in entries {
            if entry.hasSuffix("/") { page.prefixes.append(entry) } else { page.values.append(value(entry, version: version, source: source)) }
        }
        page.next = next
        return page
    }

    /// The merged page's items in order, a prefix as itself, a value as `key@source`.
    static func items(_ page: StoreListing) -> [String] {
        (page.values.map { ($0.key, "\($0.key)@\($0.source.rawValue)") } + page.prefixes.map { ($0, $0) })
            .sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }.map(\.1)
    }

    @Test func theUnionInByteOrderWithTheUpperLayersValueWinning() {
        let upper = Self.page(["a", "c", "d"], source: .store, version: 2)
        let lower = Self.page(["b", "c", "e"], source: .fixture, version: 1)
        let merged = StoreListing.merging(upper, over: lower, limit: 10)
        #expect(Self.items(merged) == ["a@store", "b@fixture", "c@store", "d@store", "e@fixture"])
        #expect(merged.values.map(\.key) == ["a", "b", "c", "d", "e"], "values stay in byte order")
        #expect(merged.values.first { $0.key == "c" }?.metadata.version == 2)
        #expect(merged.next == nil)
    }

    @Test func aCommonPrefixIsListedOnceAndSortsAsItsText() {
        // "a/" sorts after "a.txt" ("." is 0x2E, "/" 0x2F) and before "a0".
        let upper = Self.page(["a.txt", "a/", "a0"], source: .store, version: 1)
        let lower = Self.page(["a/", "b/", "ab"], source: .fixture, version: 1)
        let merged = StoreListing.merging(upper, over: lower, limit: 10)
        #expect(merged.prefixes == ["a/", "b/"])
        #expect(Self.items(merged) == ["a.txt@store", "a/", "a0@store", "ab@fixture", "b/"])
    }

    @Test func keysAreComparedAsBytesNotAsCharacters() {
        // "é" (C3 A9) after "z" (7A) in bytes; "Z" (5A) before "a" (61).
        let upper = Self.page(["Z", "é"], source: .store, version: 1)
        let lower = Self.page(["a", "z"], source: .fixture, version: 1)
        #expect(StoreListing.merging(upper, over: lower, limit: 10).values.map(\.key) == ["Z", "a", "z", "é"])
    }

    @Test func aFullPageWithItemsLeftOverEndsWithACursorAtItsLastItem() {
        let upper = Self.page(["a", "c", "e"], source: .store, version: 1)
        let lower = Self.page(["b", "d/"], source: .fixture, version: 1)
        let merged = StoreListing.merging(upper, over: lower, limit: 4)
        #expect(Self.items(merged) == ["a@store", "b@fixture", "c@store", "d/"])
        #expect(merged.next == "d/", "the cursor is the last item listed, a prefix included")
        let rest = StoreListing.merging(Self.page(["e"], source: .store, version: 1), over: StoreListing(), limit: 4)
        #expect(rest.values.map(\.key) == ["e"])
        #expect(rest.next == nil)
    }

    @Test func eitherLayersNextPageMeansAMergedNextPage() {
        let upper = Self.page(["a"], source: .store, version: 1)
        let lower = Self.page(["b"], source: .fixture, version: 1, next: "b")
        #expect(StoreListing.merging(upper, over: lower, limit: 5).next == "b")
        #expect(StoreListing.merging(lower, over: upper, limit: 5).next == "b")
    }

    @Test func aKeyInBothLayersAtTheLimitIsNotLeftOver() {
        // Exactly `limit` distinct items: no next page, though the inputs held limit + 1.
        let upper = Self.page(["a", "b"], source: .store, version: 2)
        let lower = Self.page(["b"], source: .fixture, version: 1)
        let merged = StoreListing.merging(upper, over: lower, limit: 2)
        #expect(Self.items(merged) == ["a@store", "b@store"])
        #expect(merged.next == nil)
    }

    @Test func twoEmptyLayersMakeAnEmptyLastPage() {
        let merged = StoreListing.merging(StoreListing(), over: StoreListing(), limit: 10)
        #expect(merged.values.isEmpty && merged.prefixes.isEmpty && merged.next == nil)
    }
}
