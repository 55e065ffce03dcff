import Foundation
import LarderKit
import Testing

extension KitTests {
    /// `Persistible`, the same through both implementations: a type that saves,
    /// loads (as one value or as a list), appends and deletes itself.
    @Suite struct LarderConformancePersistibleTests {
        struct Settings: Persistible, Equatable {
            static let larderKey = "app/settings"
            var theme: String
            var fontSize: Int
        }

        struct Bookmark: Persistible, Equatable {
            static let larderKey = "app/bookmarks"
            var url: String
        }

        @Test(arguments: LarderKind.allCases)
        func savesLoadsAndDeletesItself(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                let settings = Settings(theme: "dark", fontSize: 14)
                #expect(try await settings.save(to: larder).created)
                let loaded: Settings = try await Settings.load(from: larder)
                #expect(loaded == settings)
                #expect(try await larder.fetch(Settings.self, at: "app/settings") == settings)
                // A single value reads as a list of one.
                let asList: [Settings] = try await Settings.load(from: larder)
                #expect(asList == [settings])
                #expect(try await settings.delete(from: larder))
                #expect(try await !settings.delete(from: larder))
                let none: [Settings] = try await Settings.load(from: larder)
                #expect(none.isEmpty)
                #expect(await thrownCase { let _: Settings = try await Settings.load(from: larder) } == "notFound")
            }
        }

        @Test(arguments: LarderKind.allCases)
        func appendSkipsAnEqualElement(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                #expect(try await Bookmark(url: "https://a.example").append(to: larder) == 1)
                #expect(try await Bookmark(url: "https://b.example").append(to: larder) == 2)
                #expect(try await Bookmark(url: "https://a.example").append(to: larder) == 2)
                let list: [Bookmark] = try await Bookmark.load(from: larder)
                #expect(list == [Bookmark(url: "https://a.example"), Bookmark(url: "https://b.example")])
                // Another key by name.
                try await larder.save([Bookmark(url: "https://c.example")], at: "app/archived")
                let archived: [Bookmark] = try await Bookmark.load("app/archived", from: larder)
                #expect(archived == [Bookmark(url: "https://c.example")])
            }
        }
    }
}
