import Foundation
import LarderKit
import LarderTestSupport
import Testing

extension KitTests {
    /// Many keys at once, the same through both implementations: paging in byte
    /// order, one-level listings, prefix deletes and generated keys.
    @Suite struct LarderConformanceListingTests {
        /// Saves `keys` on 8 tasks at once (the http kind would take long one by one).
        static func saveAll(_ keys: [String], in larder: any Larder) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    let share = keys.enumerated().filter { $0.offset % 8 == worker }.map(\.element)
                    group.addTask {
                        for key in share { try await larder.save(Data(key.utf8), at: key, contentType: "text/plain") }
                    }
                }
                try await group.waitForAll()
            }
        }

        @Test(arguments: LarderKind.allCases)
        func pagesOf1000WalkEveryKeyInByteOrder(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                // Decimal names make byte order differ from numeric order
                // ("many/10" < "many/9"); a few non-ASCII keys sort after ASCII.
                let keys = (0..<2_497).map { "many/\($0)" } + ["many/é", "many/Z", "many/ü/deep"]
                try await Self.saveAll(keys, in: larder)
                try await larder.save(Data("x".utf8), at: "other/outside")

                var pages: [ListingPage] = []
                for try await page in larder.list(prefix: "many/", pageSize: 1000) { pages.append(page) }
                #expect(pages.map(\.keys.count) == [1000, 1000, 500])
                let listed = pages.flatMap(\.keys).map(\.key)
                #expect(listed == StoreTestSupport.byteSorted(keys))
                #expect(inByteOrder(listed))
                #expect(pages.last?.next == nil)
                #expect(pages.dropLast().allSatisfy { $0.next == $0.keys.last?.key })

                // One page by hand, starting after a key.
                let page = try await larder.listPage(prefix: "many/", after: "many/99", limit: 3, delimiter: false)
                let sorted = StoreTestSupport.byteSorted(keys)
                let start = try #require(sorted.firstIndex(of: "many/99")) + 1
                #expect(page.keys.map(\.key) == Array(sorted[start..<start + 3]))
            }
        }

        @Test(arguments: LarderKind.allCases)
        func delimiterFoldsDeeperKeysIntoPrefixes(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                for key in ["tree/a", "tree/b/c", "tree/b/d", "tree/e/f/g", "tree/z", "treetop"] {
                    try await larder.save(Data(key.utf8), at: key)
                }
                let page = try await larder.listPage(prefix: "tree/", after: nil, limit: 1000, delimiter: true)
                #expect(page.keys.map(\.key) == ["tree/a", "tree/z"])
                #expect(page.prefixes == ["tree/b/", "tree/e/"])
                #expect(page.next == nil)
                let deep = try await larder.list(prefix: "tree/", delimiter: false).values().map(\.key)
                #expect(deep == ["tree/a", "tree/b/c", "tree/b/d", "tree/e/f/g", "tree/z"])
            }
        }

        @Test(arguments: LarderKind.allCases)
        func removeAllDeletesOnlyItsPrefix(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                for key in ["tmp/1", "tmp/2", "tmp/deep/3", "tmpx/keep", "keep/1"] {
                    try await larder.save(Data(key.utf8), at: key)
                }
                #expect(try await larder.removeAll(prefix: "tmp/") == 3)
                #expect(try await larder.removeAll(prefix: "tmp/") == 0)
                #expect(try await larder.list().values().map(\.key) == ["keep/1", "tmpx/keep"])
                #expect(try await larder.removeAll() == 2)
                #expect(try await larder.list().values().isEmpty)
            }
        }

        @Test(arguments: LarderKind.allCases)
        func createGeneratesIncreasingKeysInCreationOrder(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                var created: [String] = []
                for i in 0..<30 {
                    let result = try await larder.create(["n": i], under: "jobs/")
                    #expect(result.created)
                    #expect(result.key.hasPrefix("jobs/") && result.key.count > "jobs/".count)
                    created.append(result.key)
                }
                #expect(Set(created).count == created.count)
                #expect(inByteOrder(created))
                #expect(try await larder.list(prefix: "jobs/").values().map(\.key) == created)
                // Each key holds what was created under it.
                for (i, key) in created.enumerated() {
                    #expect(try await larder.fetch([String: Int].self, at: key) == ["n": i])
                }
            }
        }
    }
}
