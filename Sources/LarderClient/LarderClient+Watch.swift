import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension LarderClient {
    /// The state of `key` now, then after each change, by long polling:
    /// `GET /store/<key>?wait=300` with `If-None-Match: <etag>` (or, while
    /// the key is absent, without it: the server then waits for the key to
    /// appear). Each poll is an async request, so a waiting watch holds a
    /// connection but no thread. The sequence ends when the consuming task is
    /// cancelled or stops iterating, and throws the first error.
    public func watch(_ key: String) -> AsyncThrowingStream<KeyState, any Error> {
        // Each state holds a whole value: keep only the newest one a slow
        // consumer has not taken yet (states may be skipped, as `watch`
        // allows), as the embedded store does.
        AsyncThrowingStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let task = Task {
                do {
                    try await self.pollChanges(of: key) { continuation.yield($0) }
                    continuation.finish()
                } catch is CancellationError {
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: Task.isCancelled ? nil : error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The watch loop: the current state, then one long poll after another
    /// until cancelled, passing on each state that differs from the last.
    private func pollChanges(of key: String, yield: (KeyState) -> Void) async throws {
        var etag = try await fetchIfPresent(key).map { stored in
            yield(.present(stored))
            return stored.etag
        }
        if etag == nil { yield(.absent) }
        while true {
            try Task.checkCancellation()
            var request = longPoll.request("GET", longPoll.url(storePath(key), query: [("wait", String(Self.watchSeconds))]))
            if let etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
            let answer = try await longPoll.send(request)
            switch answer.status {
            case 200:
                let stored = StoredData(data: answer.body, info: try HeaderValueInfo.info(key: key, answer: answer, size: answer.body.count))
                if stored.etag != etag { yield(.present(stored)) }
                etag = stored.etag
            case 304:
                continue
            case 404 where answer.body.isEmpty || (try? ModelJSON.decode(ErrorBody.self, from: answer.body))?.error == .notFound:
                // Deleted; or, when already absent, the wait for it to appear timed out.
                if etag != nil { yield(.absent) }
                etag = nil
            default:
                throw ErrorMapping.error(status: answer.status, body: answer.body, key: key)
            }
        }
    }
}
