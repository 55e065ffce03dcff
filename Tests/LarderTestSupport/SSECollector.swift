import Foundation
import LarderSupport
import LarderWire
#if canImport(Glibc)
import Glibc
#endif

/// An event stream read on a thread of its own into a list, while the
/// test does other things: the stream stays drained, so the server never
/// drops it for falling behind. Only that thread touches the client until
/// `stop` has returned.
package final class SSECollector: Sendable {
    /// What the reading thread holds: the client is its alone until it stops.
    private final class Reading: @unchecked Sendable {
        let client: SSEClient
        let collected = Locked<[SSEEvent]>([])
        let stopping = Locked(false)
        let finished = Locked(false)
        init(_ client: SSEClient) { self.client = client }
    }
    private let reading: Reading

    /// Opens `target` on the server and reads its head; events are
    /// collected from then on.
    package init(host: String = "127.0.0.1", port: Int, target: String = "/events") throws {
        let client = try SSEClient(host: host, port: port, target: target)
        let status: Int
        do { status = try client.readHead() } catch { client.close(); throw error }
        guard status == 200 else { client.close(); throw ClientError("\(target) answered \(status)") }
        let reading = Reading(client)
        self.reading = reading
        Thread {
            while !reading.stopping.withLock({ $0 }) {
                let events = (try? reading.client.events(100, timeout: 0.1)) ?? []
                if events.isEmpty && reading.client.ended { usleep(50_000) }  // the stream ended: nothing more will come
                reading.collected.withLock { $0 += events }
            }
            reading.finished.withLock { $0 = true }
        }.start()
    }

    /// What was collected so far.
    package var events: [SSEEvent] { reading.collected.withLock { $0 } }

    /// The keys of the events collected so far that name one.
    package var keys: [String] { events.compactMap { $0.json?["key"] as? String } }

    /// Stops reading (waits for the thread), closes the stream and returns
    /// everything collected.
    @discardableResult
    package func stop() -> [SSEEvent] {
        let first = reading.stopping.withLock { (s: inout Bool) -> Bool in defer { s = true }; return !s }
        while !reading.finished.withLock({ $0 }) { usleep(10_000) }
        if first { reading.client.close() }
        return events
    }

    deinit { stop() }
}
