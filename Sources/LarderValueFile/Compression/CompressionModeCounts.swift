import Synchronization

/// How many values the store compressed in each `CompressionMode` since
/// it started, for `/metrics` (`larder_compression_mode_total`). Atomics:
/// every identity upload adds one, and a scrape must not wait on them.
public final class CompressionModeCounts: Sendable {
    private let deflate = Atomic<Int>(0)
    private let huffman = Atomic<Int>(0)
    private let stored = Atomic<Int>(0)

    public init() {}

    func add(_ mode: CompressionMode) {
        switch mode {
        case .deflate: deflate.wrappingAdd(1, ordering: .relaxed)
        case .huffman: huffman.wrappingAdd(1, ordering: .relaxed)
        case .stored: stored.wrappingAdd(1, ordering: .relaxed)
        }
    }

    public func count(_ mode: CompressionMode) -> Int {
        switch mode {
        case .deflate: deflate.load(ordering: .relaxed)
        case .huffman: huffman.load(ordering: .relaxed)
        case .stored: stored.load(ordering: .relaxed)
        }
    }
}
