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
        var quickBackoff = Duration.zero
        while true {
            try Task.checkCancellation()
            let started = ContinuousClock.now
            var request = longPoll.request("GET", longPoll.url(storePath(key), query: [("wait", String(Self.watchSeconds))]))
            if let etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
            let answer = try await longPoll.send(request)
            switch answer.status {
            case 200:
                let stored = StoredData(data: answer.body, info: try HeaderValueInfo.info(key: key, answer: answer, size: answer.body.count))
                if stored.etag != etag { yield(.present(stored)) }
                etag = stored.etag
            case 304:
                try await Self.pauseAfterQuickPoll(started: started, backoff: &quickBackoff)
            case 404 where answer.body.isEmpty || (try? ModelJSON.decode(ErrorBody.self, from: answer.body))?.error == .notFound:
                // Deleted; or, when already absent, the wait for it to appear timed out.
                if etag != nil {
                    yield(.absent)
                } else {
                    try await Self.pauseAfterQuickPoll(started: started, backoff: &quickBackoff)
                }
                etag = nil
            default:
                throw ErrorMapping.error(status: answer.status, body: answer.body, key: key)
            }
        }
    }

    /// An unchanged answer that came back long before the `wait` asked (a
    /// proxy, an injected fault) would make a long-poll loop hot (a watch,
    /// `journalEntries`): after one in under a second, waits `backoff`,
    /// grown by `nextQuickPollBackoff`; an answer that did wait resets it.
    static func pauseAfterQuickPoll(started: ContinuousClock.Instant, backoff: inout Duration) async throws {
        guard ContinuousClock.now - started < .seconds(1) else {
            backoff = .zero
            return
        }
        backoff = nextQuickPollBackoff(backoff)
        try await Task.sleep(for: backoff)
    }

    /// 100 ms after the first quick answer, doubling up to 2 s.
    static func nextQuickPollBackoff(_ previous: Duration) -> Duration {
        previous == .zero ? .milliseconds(100) : min(previous * 2, .seconds(2))
    }
}
