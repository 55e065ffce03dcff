import Foundation
import LarderKit
import Testing

extension KitTests {
    /// `changes(prefix:after:)`, the same through both implementations: other
    /// writers' puts and deletes in order with increasing ids, bulk deletes,
    /// and a replay that resumes after a given id.
    @Suite struct LarderConformanceChangeFeedTests {
        /// Starts following `prefix` and returns once the feed is live: a
        /// subscription (an SSE connection, for http) is not known to be in place
        /// when `changes` returns, so a marker key is written until its event arrives.
        static func follow(_ prefix: String, in store: KitStore) async throws -> StreamRecorder<ChangeEvent> {
            let recorder = StreamRecorder(try await store.larder.changes(prefix: prefix))
            let marker = prefix + "ready"
            let deadline = Date().addingTimeInterval(60)
            while !recorder.elements.contains(where: { $0.key == marker }) {
                guard Date() < deadline else {
                    recorder.stop()
                    throw KitFailure("the change feed of \(prefix) never showed \(marker)")
                }
                try await store.larder.save(Data("1".utf8), at: marker, contentType: "application/json")
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            return recorder
        }

        /// The events that are not the marker's.
        static func withoutMarker(_ events: [ChangeEvent]) -> [ChangeEvent] {
            events.filter { $0.key?.hasSuffix("/ready") != true }
        }

        static func summary(_ events: [ChangeEvent]) -> [String] {
            events.map { "\($0.kind.rawValue) \($0.key ?? "prefix " + ($0.prefix ?? "?"))" }
        }

        /// Ids are 16 hex digits that increase with every change.
        static func increasing(_ ids: [String]) -> Bool {
            let numbers = ids.map { UInt64($0, radix: 16) }
            guard ids.allSatisfy({ $0.count == 16 }), !numbers.contains(nil) else { return false }
            return zip(numbers, numbers.dropFirst()).allSatisfy { $0! < $1! }
        }

        @Test(arguments: LarderKind.allCases)
        func feedShowsOtherWritersChangesInOrderAndResumesAfterAnID(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let recorder = try await Self.follow("feed/", in: store)
                defer { recorder.stop() }
                let other = store.otherWriter()
                _ = try await Task {
                    try await other.save(Data("1".utf8), at: "feed/a", contentType: "application/json")
                    try await other.save(Data("2".utf8), at: "feed/b", contentType: "application/json")
                    try await other.delete("feed/a")
                    // Outside the prefix: must not show up.
                    try await other.save(Data("3".utf8), at: "elsewhere/c", contentType: "application/json")
                }.value
                let events = Self.withoutMarker(try await recorder.wait(for: "put, put, delete") {
                    Self.withoutMarker($0).count >= 3
                })
                #expect(Self.summary(events) == ["put feed/a", "put feed/b", "delete feed/a"])
                #expect(events.first?.etag != nil)
                #expect(Self.increasing(events.map(\.id)), "\(events.map(\.id))")

                // A bulk delete is one event naming the prefix.
                #expect(try await other.removeAll(prefix: "feed/") == 2)  // feed/b and the marker
                let all = Self.withoutMarker(try await recorder.wait(for: "the bulk delete") {
                    $0.contains { $0.prefix == "feed/" }
                })
                let bulk = try #require(all.last)
                #expect(bulk.kind == .delete)
                #expect(bulk.key == nil)
                #expect(bulk.data.deleted == 2)
                #expect(bulk.concerns(key: "feed/anything"))
                #expect(Self.increasing(all.map(\.id)))

                // Resuming after the first put replays what followed it, same ids, same order.
                let replay = StreamRecorder(try await store.larder.changes(prefix: "feed/", after: events[0].id))
                defer { replay.stop() }
                let replayed = try await replay.wait(for: "the replay up to the bulk delete") {
                    $0.contains { $0.prefix == "feed/" }
                }
                #expect(Array(replayed.map(\.id)) == Array(all.dropFirst().map(\.id)), "\(Self.summary(replayed))")
                #expect(Self.summary(replayed) == ["put feed/b", "delete feed/a", "delete prefix feed/"])
            }
        }
    }
}
