import LarderValueFile
import Synchronization

/// Flushes the group committer (`GroupCommit`) issued and writes acknowledged
/// as durable since start-up, for `/metrics` (`larder_durable_flushes_total`,
/// `larder_durable_writes_total`). Without sharing a PUT costs two flushes
/// (its file's data before the rename, the directory entry after it), so
/// flushes below twice the writes is sharing at work. Atomics: a scrape
/// must not wait on writers.
public final class DurabilityCounts: Sendable {
    private let flushes = Atomic<Int>(0)
    private let writes = Atomic<Int>(0)

    public init() {}

    package func addFlush() { flushes.wrappingAdd(1, ordering: .relaxed) }
    package func addWrite() { writes.wrappingAdd(1, ordering: .relaxed) }

    public var flushCount: Int { flushes.load(ordering: .relaxed) }
    public var writeCount: Int { writes.load(ordering: .relaxed) }
}
