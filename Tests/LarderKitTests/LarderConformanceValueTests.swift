import Foundation
import LarderKit
import Testing

extension KitTests {
    /// One value at a time, the same through `EmbeddedLarder` and `LarderClient`:
    /// Codable and raw round trips, write results, conditions, deletes, key
    /// rules and TTL.
    @Suite struct LarderConformanceValueTests {
        struct Note: Codable, Equatable, Sendable {
            var title: String
            var created: Date
            var tags: [String]
        }

        @Test(arguments: LarderKind.allCases)
        func codableRoundTripWithISO8601Dates(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                // Whole seconds: ISO 8601 without fractions is what the default coder writes.
                let note = Note(title: "groceries", created: Date(timeIntervalSince1970: 1_715_000_000), tags: ["a", "b"])
                try await larder.save(note, at: "notes/1")
                #expect(try await larder.fetch(Note.self, at: "notes/1") == note)
                let stored = try await larder.fetch("notes/1")
                #expect(stored.contentType.hasPrefix("application/json"))
                // The bytes other languages read: the date as an ISO 8601 string.
                #expect(String(decoding: stored.data, as: UTF8.self).contains(#""created":"2024-05-06T12:53:20Z""#),
                        "\(String(decoding: stored.data, as: UTF8.self))")
            }
        }

        @Test(arguments: LarderKind.allCases)
        func rawBytesKeepTheirContentType(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                // A PNG signature then every byte value: nothing may be re-encoded as text.
                let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0...255).map(UInt8.init))
                let written = try await larder.save(png, at: "images/dot.png", contentType: "image/png")
                let stored = try await larder.fetch("images/dot.png")
                #expect(stored.data == png)
                #expect(stored.contentType == "image/png")
                #expect(stored.etag == written.etag)
                let info = try await larder.info("images/dot.png")
                #expect(info.key == "images/dot.png")
                #expect(info.size == png.count)
                #expect(info.contentType == "image/png")
                #expect(info.etag == written.etag)
            }
        }

        @Test(arguments: LarderKind.allCases)
        func writeResultSaysWhetherTheKeyWasNew(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let first = try await store.larder.save(Data("one".utf8), at: "counts/x")
                let second = try await store.larder.save(Data("two".utf8), at: "counts/x")
                #expect(first.key == "counts/x")
                #expect(first.created)
                #expect(!second.created)
                #expect(first.etag != second.etag)
            }
        }

        @Test(arguments: LarderKind.allCases)
        func ifMatchIsCompareAndSwap(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                try await larder.save(Note(title: "v1", created: Date(timeIntervalSince1970: 0), tags: []), at: "cas")
                let (_, etag) = try await larder.fetchVersioned(Note.self, at: "cas")
                let saved = try await larder.save(Data("{\"v\":2}".utf8), at: "cas", contentType: "application/json",
                                                  condition: .ifMatch(etag), ttl: nil)
                #expect(!saved.created)
                // `etag` is stale now: another save came in between.
                #expect(await thrownCase {
                    try await larder.save(Data("{\"v\":3}".utf8), at: "cas", contentType: "application/json",
                                          condition: .ifMatch(etag), ttl: nil)
                } == "preconditionFailed")
                #expect(try await larder.fetch("cas").data == Data("{\"v\":2}".utf8))
                // The version a write returned is as good as a fetched one.
                try await larder.save(Data("{\"v\":4}".utf8), at: "cas", ifMatch: saved.etag)
            }
        }

        @Test(arguments: LarderKind.allCases)
        func ifAbsentCreatesOnlyOnce(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                let first = try await larder.save(Data("mine".utf8), at: "lock", contentType: "text/plain",
                                                  condition: .ifAbsent, ttl: nil)
                #expect(first.created)
                #expect(await thrownCase {
                    try await larder.save(Data("yours".utf8), at: "lock", contentType: "text/plain", condition: .ifAbsent, ttl: nil)
                } == "preconditionFailed")
                #expect(try await larder.fetch("lock").data == Data("mine".utf8))
            }
        }

        @Test(arguments: LarderKind.allCases)
        func deleteSaysWhetherThereWasAValue(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                try await larder.save(Data("x".utf8), at: "gone")
                #expect(try await larder.delete("gone"))
                #expect(try await !larder.delete("gone"))
                #expect(await thrownCase { _ = try await larder.fetch("gone") } == "notFound")
            }
        }

        @Test(arguments: LarderKind.allCases)
        func absentKeysAreNotFound(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                #expect(await thrownCase { _ = try await larder.fetch("never/written") } == "notFound")
                #expect(await thrownCase { _ = try await larder.info("never/written") } == "notFound")
                let stored = try await larder.fetchIfPresent("never/written")
                #expect(stored == nil)
                let note = try await larder.fetchIfPresent(Note.self, at: "never/written")
                #expect(note == nil)
            }
        }

        @Test(arguments: LarderKind.allCases)
        func invalidKeysAreRejected(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                for key in ["a//b", "..", "a/../b"] {
                    let saving = await thrownCase { try await larder.save(Data("x".utf8), at: key) }
                    #expect(saving == "invalidKey", "save \(key)")
                    let fetching = await thrownCase { _ = try await larder.fetch(key) }
                    #expect(fetching == "invalidKey", "fetch \(key)")
                }
                // Nothing was written under a normalised spelling either.
                let listed = try await larder.list().values()
                #expect(listed.isEmpty)
            }
        }

        @Test(arguments: LarderKind.allCases)
        func ttlExpiresTheValueAndTheListingEntry(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                let saved = Date()
                try await larder.save(Data("brief".utf8), at: "ttl/short", ttl: .seconds(1))
                // Readable, with its expiry, until the second is up (a loaded
                // machine may take that long to ask: then absent is right).
                if let info = try? await larder.info("ttl/short") {
                    let expires = try #require(info.expires)
                    // About a second after the write (HTTP dates have whole seconds).
                    let gap = Double(expires.nanoseconds - info.modified.nanoseconds) / 1e9
                    #expect(gap > 0 && gap <= 2, "expires \(gap) s after modified")
                } else {
                    #expect(Date().timeIntervalSince(saved) >= 1, "ttl/short vanished before its second was up")
                }
                try await larder.save(Data("stays".utf8), at: "ttl/long")
                #expect(try await larder.info("ttl/long").expires == nil)
                try await Task.sleep(nanoseconds: 1_300_000_000)
                // Expired by now; the loop only tolerates a slow machine, it is not the bound under test.
                let deadline = Date().addingTimeInterval(10)
                while try await larder.fetchIfPresent("ttl/short") != nil, Date() < deadline {
                    try await Task.sleep(nanoseconds: 50_000_000)
                }
                #expect(await thrownCase { _ = try await larder.fetch("ttl/short") } == "notFound")
                #expect(try await larder.list(prefix: "ttl/").values().map(\.key) == ["ttl/long"])
            }
        }
    }
}
