import Foundation
import LarderKit
import Testing

extension KitTests {
    /// JSON-aware writes, the same through both implementations: atomic append
    /// (with `unique`) and the compare-and-swap `update` loop under contention.
    @Suite struct LarderConformanceJSONTests {
        struct Tag: Codable, Equatable, Sendable {
            var name: String
            var weight: Int
        }

        struct Counter: Codable, Equatable, Sendable {
            var value: Int
        }

        @Test(arguments: LarderKind.allCases)
        func appendGrowsAListAndUniqueSkipsEqualElements(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                // An absent key starts a list.
                #expect(try await larder.append(Tag(name: "a", weight: 1), to: "tags").count == 1)
                #expect(try await larder.append(Tag(name: "b", weight: 2), to: "tags", unique: true).count == 2)
                // The same JSON again: skipped with unique, kept without.
                #expect(try await larder.append(Tag(name: "a", weight: 1), to: "tags", unique: true).count == 2)
                #expect(try await larder.append(Tag(name: "a", weight: 1), to: "tags").count == 3)
                #expect(try await larder.append(contentsOf: [Tag(name: "c", weight: 3), Tag(name: "b", weight: 2)],
                                                to: "tags", unique: true).count == 4)
                let tags = try await larder.fetch([Tag].self, at: "tags")
                #expect(tags.map(\.name) == ["a", "b", "a", "c"])
                // An array element stays one element.
                #expect(try await larder.append(["x", "y"], to: "nested").count == 1)
                #expect(try await larder.fetch([[String]].self, at: "nested") == [["x", "y"]])
            }
        }

        @Test(arguments: LarderKind.allCases)
        func appendToAValueThatIsNotJSONFails(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                try await larder.save(Data("plain words".utf8), at: "text", contentType: "text/plain")
                #expect(await thrownCase { try await larder.append(Tag(name: "a", weight: 1), to: "text") } == "notJSON")
                #expect(try await larder.fetch("text").data == Data("plain words".utf8))
            }
        }

        @Test(arguments: LarderKind.allCases)
        func concurrentUpdatesLoseNoIncrement(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                // Two handles for the http kind: two clients race, as two apps would.
                let handles = [store.larder, store.otherWriter()]
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<4 {
                        let larder = handles[task % 2]
                        group.addTask {
                            for _ in 0..<50 {
                                try await larder.update(Counter.self, at: "counter", initial: Counter(value: 0)) { $0.value += 1 }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(try await store.larder.fetch(Counter.self, at: "counter") == Counter(value: 200))
            }
        }

        @Test(arguments: LarderKind.allCases)
        func updateWithoutInitialNeedsAValue(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                #expect(await thrownCase { try await larder.update(Counter.self, at: "none") { $0.value += 1 } } == "notFound")
                try await larder.save(Counter(value: 41), at: "some")
                #expect(try await larder.update(Counter.self, at: "some") { $0.value += 1 } == Counter(value: 42))
                #expect(try await larder.fetch(Counter.self, at: "some") == Counter(value: 42))
            }
        }
    }
}
