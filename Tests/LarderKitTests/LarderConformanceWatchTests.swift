import Foundation
import LarderKit
import LarderWire
import Testing

extension KitTests {
    /// `watch(key)`, the same through both implementations: the state now, then
    /// each change by whoever made it, then `.absent` on delete.
    @Suite struct LarderConformanceWatchTests {
        /// The value a state holds as text ("absent" for none).
        static func text(_ state: KeyState) -> String {
            state.value.map { String(decoding: $0.data, as: UTF8.self) } ?? "absent"
        }

        @Test(arguments: LarderKind.allCases)
        func watchSeesTheFirstStateThenOtherWritersThenTheDelete(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let larder = store.larder
                try await larder.save(Data("v1".utf8), at: "watched/key", contentType: "text/plain")
                let recorder = StreamRecorder(larder.watch("watched/key"))
                defer { recorder.stop() }
                let first = try await recorder.wait(for: "the first state") { !$0.isEmpty }
                #expect(Self.text(first[0]) == "v1")
                #expect(first[0].value?.contentType == "text/plain")

                // Another task through the same larder.
                _ = try await Task { try await larder.save(Data("v2".utf8), at: "watched/key", contentType: "text/plain") }.value
                try await recorder.wait(for: "v2") { $0.map(Self.text).contains("v2") }

                // Over HTTP, a writer that is not a LarderClient at all: raw bytes on a socket.
                if let server = store.server {
                    let response = try WireClient(port: server.port).put("watched/key", "v3", contentType: "text/plain")
                    #expect(response.status == 204, "overwrite: \(response.status) \(response.text)")
                    try await recorder.wait(for: "v3 from a raw client") { $0.map(Self.text).contains("v3") }
                }

                // Another handle on the same store (for http, another client).
                try await store.otherWriter().delete("watched/key")
                let states = try await recorder.wait(for: ".absent after the delete") { $0.last == .absent }
                // States may be skipped, never reordered.
                let texts = states.map(Self.text)
                let order = store.server == nil ? ["v1", "v2", "absent"] : ["v1", "v2", "v3", "absent"]
                #expect(texts.reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } } == order, "\(texts)")
            }
        }

        @Test(arguments: LarderKind.allCases)
        func watchingAnAbsentKeyStartsAbsentAndSeesItsCreation(kind: LarderKind) async throws {
            try await withKitStore(kind) { store in
                let recorder = StreamRecorder(store.larder.watch("later/key"))
                defer { recorder.stop() }
                let first = try await recorder.wait(for: "the first state") { !$0.isEmpty }
                #expect(first[0] == .absent)
                try await store.otherWriter().save(Data("{\"n\":1}".utf8), at: "later/key", contentType: "application/json")
                let states = try await recorder.wait(for: "the created value") { $0.last?.value != nil }
                #expect(states.last?.value?.data == Data("{\"n\":1}".utf8))
            }
        }
    }
}
