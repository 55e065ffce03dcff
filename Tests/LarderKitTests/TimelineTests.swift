import Foundation
import LarderClient
import LarderEmbedded
import LarderKit
import LarderTestSupport
import Testing

extension KitTests {
    /// docs/swift-api.md's timeline example (TimelineExample.swift) run
    /// against both kinds of store: what the guide promises must hold.
    @Suite struct TimelineTests {
        /// `Timeline` over any store (a generic, so `any Larder` can be its store).
        static func check(_ larder: some Larder, otherWriter: some Larder) async throws {
            let timeline = Timeline(store: larder)
            let followed = StreamRecorder(try await timeline.followers())
            defer { followed.stop() }

            var keys: [String] = []
            for (i, author) in ["ana", "ben", "cleo", "dev", "eli"].enumerated() {
                keys.append(try await timeline.post("post \(i)", by: author))
            }
            let posts = try await timeline.posts()
            #expect(posts.map(\.key) == keys)
            #expect(posts.map(\.post.text) == (0..<5).map { "post \($0)" })
            #expect(posts.map(\.post.posted) == posts.map(\.post.posted).sorted())

            // 3 tasks × 20 likes on one post, two of them through another handle: none lost.
            let liked = keys[2]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<3 {
                    group.addTask {
                        for _ in 0..<20 {
                            if task == 0 { try await timeline.like(liked) } else { try await Timeline(store: otherWriter).like(liked) }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let after = try await timeline.posts()
            #expect(after.first { $0.key == liked }?.post.likes == 60)
            #expect(after.filter { $0.key != liked }.allSatisfy { $0.post.likes == 0 })

            // Followers saw a post that was published after they started.
            try await timeline.post("late news", by: "fay")
            try await followed.wait(for: "the late post") { $0.contains { $0.text == "late news" } }
        }

        @Test(arguments: LarderKind.allCases)
        func timelineKeepsOrderAndCountsEveryLike(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                try await Self.check(store.larder, otherWriter: store.otherWriter())
            }
        }

        @Test func theDemoRunsOnBothStores() async throws {
            let server = try TestServer()
            defer { server.stop() }
            let folder = URL(fileURLWithPath: TestServer.makeTempDirectory())
            defer { try? FileManager.default.removeItem(at: folder) }
            let url = URL(string: "http://127.0.0.1:\(server.port)")!
            try await timelineDemo(folder: folder, server: url)
            try await timelineDemo(folder: folder, server: url)  // again: the folder is closed and reopens

            let remote = try await Timeline(store: LarderClient(baseURL: url)).posts()
            #expect(remote.map(\.post.text) == ["Hello, Larder", "Hello, Larder"])
            #expect(remote.map(\.post.likes) == [1, 1])
            let local = try EmbeddedLarder(directory: folder, fsync: false)
            defer { local.close() }
            #expect(try await Timeline(store: local).posts().map(\.post.author) == ["ana", "ana"])
        }
    }
}
