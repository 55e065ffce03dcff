import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension LarderClient {
    /// `GET /journal`: the requests the server answered for this client's
    /// namespace (or the default one), oldest first, that match every filter
    /// given, so a test can check what the code under test sent
    /// (docs/journal.md).
    ///
    /// ```swift
    /// let reads = try await larder.journal(method: "GET", prefix: "users/7")
    /// #expect(reads.requests.count == 1)
    /// ```
    ///
    /// - Parameters:
    ///   - method: only requests with this method (`"GET"`; any case).
    ///   - prefix: only requests to `/store/` keys that start with this.
    ///   - status: only answers with this status (`"404"`) or of this
    ///     class (`"4xx"`).
    ///   - since: only requests after this sequence number: the `next` of an
    ///     earlier page.
    ///   - limit: at most this many (the server caps it at `--journal N`).
    /// - Returns: the page; its `next` is the `since` of the next call.
    /// - Throws: `LarderError.server` for an error answer (400 for a filter
    ///   the server cannot use, 404 when the server runs with `--journal 0`,
    ///   401 without the token), `LarderError.unreachable` for a transport
    ///   failure.
    public func journal(method: String? = nil, prefix: String? = nil, status: String? = nil,
                        since: UInt64? = nil, limit: Int? = nil) async throws -> JournalPage {
        let filter = JournalQuery(method: method, prefix: prefix, status: status)
        return try await journalPage(filter, since: since, limit: limit, wait: nil, through: transport)
    }

    /// Every request the server answers for this client's namespace from
    /// now on (with `since`, from just after that sequence number), that
    /// matches the filters, in the order the journal recorded them: one
    /// long poll after another (`GET /journal?since=<next>&wait=25`), so a
    /// stream that waits holds a connection but no thread.
    ///
    /// Returns once the stream's starting point is known: a request made
    /// after this returns is in the sequence. The sequence ends when the
    /// consuming task is cancelled or stops iterating (the waiting poll is
    /// cancelled, and the server forgets it), and throws the first error.
    ///
    /// Entries the journal let go of before the stream read them (more than
    /// `--journal N` requests between two polls) are skipped: their
    /// sequence numbers are missing.
    ///
    /// - Parameters:
    ///   - method: only requests with this method.
    ///   - prefix: only requests to `/store/` keys that start with this.
    ///   - status: only answers with this status (`"404"`) or class (`"4xx"`).
    ///   - since: the sequence number to follow from; nil: from now.
    public func journalEntries(method: String? = nil, prefix: String? = nil, status: String? = nil,
                               since: UInt64? = nil) async throws -> AsyncThrowingStream<JournalEntry, any Error> {
        let filter = JournalQuery(method: method, prefix: prefix, status: status)
        // "Now" is the newest sequence number the journal has given out: the
        // `next` of a page without `since` and `limit` (every match fits,
        // as the journal never holds more than the page's default limit).
        let start: UInt64
        if let since {
            start = since
        } else {
            start = try await journalPage(filter, since: nil, limit: nil, wait: nil, through: transport).next
        }
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await self.followJournal(filter, from: start) { continuation.yield($0) }
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

    /// How long each of `journalEntries`' polls asks the server to wait:
    /// under the 30 s idle timeout common to proxies and load balancers, so
    /// a quiet stream is not cut by one in between.
    static let journalWaitSeconds = 25

    /// The filters of `GET /journal` that both calls pass on unchanged.
    struct JournalQuery: Sendable {
        let method: String?
        let prefix: String?
        let status: String?
    }

    /// The long-poll loop of `journalEntries`: passes on each page's
    /// entries and asks again from its `next`, until cancelled.
    private func followJournal(_ filter: JournalQuery, from start: UInt64,
                               yield: (JournalEntry) -> Void) async throws {
        var since = start
        var quickBackoff = Duration.zero
        while true {
            try Task.checkCancellation()
            let started = ContinuousClock.now
            let page = try await journalPage(filter, since: since, limit: nil, wait: Self.journalWaitSeconds, through: longPoll)
            for entry in page.requests { yield(entry) }
            since = max(since, page.next)
            // An empty page before the wait was over (the namespace was
            // dropped, a proxy answered) would make the loop hot.
            if page.requests.isEmpty {
                try await Self.pauseAfterQuickPoll(started: started, backoff: &quickBackoff)
            }
        }
    }

    /// One `GET /journal` with the filters, through `transport` (the long
    /// poll's own when it waits).
    private func journalPage(_ filter: JournalQuery, since: UInt64?, limit: Int?, wait: Int?,
                             through transport: HTTPTransport) async throws -> JournalPage {
        var query: [(String, String)] = []
        if let method = filter.method { query.append(("method", method)) }
        if let prefix = filter.prefix { query.append(("prefix", prefix)) }
        if let status = filter.status { query.append(("status", status)) }
        if let since { query.append(("since", String(since))) }
        if let limit { query.append(("limit", String(limit))) }
        if let wait { query.append(("wait", String(wait))) }
        let answer = try await transport.send(transport.request("GET", transport.url("/journal", query: query)))
        guard answer.status == 200 else {
            // Not `ErrorMapping.error`: its 404 is a missing key, and here
            // it means the server keeps no journal.
            throw LarderError.server(status: answer.status, error: ErrorMapping.errorBody(status: answer.status, body: answer.body))
        }
        return try Self.decode(JournalPage.self, answer)
    }
}
