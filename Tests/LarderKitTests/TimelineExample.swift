// docs/swift-api.md's Swift example, compiled here so it cannot drift: the
// lines between the two markers must equal that page's ```swift block after
// `<!-- swift-timeline -->` (TimelineDocTests), and TimelineTests runs it.

// docs: swift-timeline begin
import Foundation
import LarderClient    // LarderClient: a Larder server over HTTP
import LarderEmbedded  // EmbeddedLarder: the same store in a folder, no server

struct Post: Codable, Sendable {
    var author: String
    var text: String
    var posted: Date
    var likes = 0
}

/// A timeline of posts in any Larder: the code is the same on the device
/// and against a server.
struct Timeline<Store: Larder>: Sendable {
    let store: Store

    /// Publishes a post; its generated key sorts after every earlier post.
    @discardableResult
    func post(_ text: String, by author: String) async throws -> String {
        try await store.create(Post(author: author, text: text, posted: Date()), under: "posts/").key
    }

    /// Every post with its key, oldest first.
    func posts() async throws -> [(key: String, post: Post)] {
        var all: [(key: String, post: Post)] = []
        for try await page in store.list(prefix: "posts/") {
            for entry in page.keys {
                // Deleted since the listing: leave it out.
                if let post = try await store.fetchIfPresent(Post.self, at: entry.key) {
                    all.append((entry.key, post))
                }
            }
        }
        return all
    }

    /// Adds a like. `update` retries when another writer got in between,
    /// so likes from many devices at once all count.
    @discardableResult
    func like(_ key: String) async throws -> Int {
        try await store.update(Post.self, at: key) { $0.likes += 1 }.likes
    }

    /// What followers see: each post as it is published or liked, by anyone,
    /// from the moment this returns.
    func followers() async throws -> AsyncThrowingStream<Post, any Error> {
        let changes = try await store.changes(prefix: "posts/")
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await change in changes where change.kind == .put {
                        if let key = change.key, let post = try await store.fetchIfPresent(Post.self, at: key) {
                            continuation.yield(post)
                        }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

func timelineDemo(folder: URL, server: URL) async throws {
    // On the device: the store's files in a folder.
    let local = try EmbeddedLarder(directory: folder)
    defer { local.close() }
    try await Timeline(store: local).post("Written offline", by: "ana")

    // Against a server (`larder serve`): the same Timeline.
    let timeline = Timeline(store: LarderClient(baseURL: server))
    let key = try await timeline.post("Hello, Larder", by: "ben")
    try await timeline.like(key)
    for (_, post) in try await timeline.posts() {
        print("\(post.author): \(post.text) (\(post.likes) likes)")
    }
}
// docs: swift-timeline end
