import Synchronization

/// What the HTTP server counts for `/metrics`: answers by method and
/// status, their latency by method, bytes read from and written to client
/// sockets, and open connections.
///
/// Counted here, in the HTTP layer, rather than in a middleware: every
/// answer is seen, also those given before any application code runs (a
/// 400 for a bad head, 408, 413 on `Content-Length`, 431, the 503 over the
/// connection limit), and the bytes are the exact bytes that crossed the
/// socket, heads and chunk framing included.
///
/// Cost per request: one clock read and a few relaxed atomic adds; no lock,
/// no allocation, no string. The counters are split into shards and each
/// connection writes to one (round robin as they open), so connections
/// served on different cores seldom touch one cache line; a scrape adds the
/// shards up. Each counter only rises (the connection gauge aside), so a
/// scrape taken while requests run may be a moment behind, never wrong.
public final class HTTPServerMetrics: Sendable {
    /// The `method` label of each slot: the last is every other method, and
    /// requests whose head could not be parsed (so their method is unknown).
    public static let methodLabels = ["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS", "other"]
    /// Upper bounds of the latency buckets in seconds; `+Inf` follows.
    public static let bucketBounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    static let methodCount = 8
    /// A slot per status code 0-599 (0 stands for a code outside 100-599,
    /// which Larder never sends).
    static let statusSlots = 600
    static let bucketCount = 15
    private static let shardCount = 8

    /// One shard of the counters. `requests`, `buckets` and `durationNanos`
    /// are indexed by method slot first.
    final class Shard: Sendable {
        let requests: InlineArray<4800, Atomic<Int>>     // methodCount × statusSlots
        let buckets: InlineArray<120, Atomic<Int>>       // methodCount × bucketCount, not cumulative
        let durationNanos: InlineArray<8, Atomic<Int>>   // methodCount
        let bytesIn = Atomic<Int>(0)
        let bytesOut = Atomic<Int>(0)

        init() {
            requests = InlineArray { _ in Atomic(0) }
            buckets = InlineArray { _ in Atomic(0) }
            durationNanos = InlineArray { _ in Atomic(0) }
            precondition(requests.count == methodCount * statusSlots && buckets.count == methodCount * bucketCount
                         && durationNanos.count == methodCount && bucketBounds.count + 1 == bucketCount)
            precondition(bucketBounds.enumerated().allSatisfy { i, bound in
                let nanos = UInt64((bound * 1e9).rounded())
                return HTTPServerMetrics.bucket(nanos) == i && HTTPServerMetrics.bucket(nanos + 1) == i + 1
            }, "bucket(_:) does not match bucketBounds")
        }

        /// Bytes received from a client socket.
        @inline(__always) func received(_ n: Int) { bytesIn.wrappingAdd(n, ordering: .relaxed) }
        /// Bytes sent to a client socket.
        @inline(__always) func sent(_ n: Int) { bytesOut.wrappingAdd(n, ordering: .relaxed) }

        /// One answer: its request's method (nil: unknown), its status, and
        /// the nanoseconds from the request's head to the answer being queued.
        func answered(_ method: HTTPMethod?, status: Int, nanos: UInt64) {
            let m = HTTPServerMetrics.slot(of: method)
            let s = (100..<statusSlots).contains(status) ? status : 0
            requests[m * statusSlots + s].wrappingAdd(1, ordering: .relaxed)
            buckets[m * bucketCount + HTTPServerMetrics.bucket(nanos)].wrappingAdd(1, ordering: .relaxed)
            durationNanos[m].wrappingAdd(Int(truncatingIfNeeded: nanos), ordering: .relaxed)
        }
    }

    private let shards: [Shard]
    private let nextShard = Atomic<Int>(0)
    private let connections = Atomic<Int>(0)
    private let evictions = Atomic<Int>(0)

    public init() {
        shards = (0..<Self.shardCount).map { _ in Shard() }
    }

    /// The shard a new connection writes to.
    func shardForNewConnection() -> Shard {
        shards[nextShard.wrappingAdd(1, ordering: .relaxed).oldValue & (Self.shardCount - 1)]
    }

    func connectionOpened() { connections.wrappingAdd(1, ordering: .relaxed) }
    func connectionClosed() { connections.wrappingSubtract(1, ordering: .relaxed) }
    /// An idle connection closed to make room at the connection cap.
    func connectionEvicted() { evictions.wrappingAdd(1, ordering: .relaxed) }

    /// The bucket of a latency: the first bound it does not exceed (`le`
    /// is inclusive), written out so the hot path reads no shared array.
    static func bucket(_ nanos: UInt64) -> Int {
        switch nanos {
        case ...500_000: 0
        case ...1_000_000: 1
        case ...2_500_000: 2
        case ...5_000_000: 3
        case ...10_000_000: 4
        case ...25_000_000: 5
        case ...50_000_000: 6
        case ...100_000_000: 7
        case ...250_000_000: 8
        case ...500_000_000: 9
        case ...1_000_000_000: 10
        case ...2_500_000_000: 11
        case ...5_000_000_000: 12
        case ...10_000_000_000: 13
        default: 14
        }
    }

    static func slot(of method: HTTPMethod?) -> Int {
        switch method {
        case .get: 0
        case .head: 1
        case .put: 2
        case .post: 3
        case .patch: 4
        case .delete: 5
        case .options: 6
        case .other, nil: 7
        }
    }

    /// Answers of one method with one status.
    public struct RequestCount: Sendable, Equatable {
        public let method: String
        public let status: Int
        public let count: Int
    }

    /// The latency histogram of one method.
    public struct Latency: Sendable, Equatable {
        public let method: String
        /// Cumulative counts per bound of `bucketBounds`, then `+Inf` (= `count`).
        public let cumulative: [Int]
        public let sumSeconds: Double
        public var count: Int { cumulative.last ?? 0 }
    }

    /// Every counter at one moment (added up over the shards).
    public struct Snapshot: Sendable {
        /// Non-zero counts, by method slot, then status.
        public var requests: [RequestCount] = []
        /// Methods that were answered at least once, in slot order.
        public var latencies: [Latency] = []
        public var bytesIn = 0
        public var bytesOut = 0
        public var connectionsOpen = 0
        /// Idle connections closed at the cap to let a new one in.
        public var connectionsEvicted = 0
    }

    public func snapshot() -> Snapshot {
        var snapshot = Snapshot()
        for m in 0..<Self.methodCount {
            for s in 0..<Self.statusSlots {
                var n = 0
                for shard in shards { n &+= shard.requests[m * Self.statusSlots + s].load(ordering: .relaxed) }
                if n > 0 { snapshot.requests.append(RequestCount(method: Self.methodLabels[m], status: s, count: n)) }
            }
            var cumulative = [Int](repeating: 0, count: Self.bucketCount)
            var nanos = 0
            for shard in shards {
                for b in 0..<Self.bucketCount { cumulative[b] &+= shard.buckets[m * Self.bucketCount + b].load(ordering: .relaxed) }
                nanos &+= shard.durationNanos[m].load(ordering: .relaxed)
            }
            for b in 1..<Self.bucketCount { cumulative[b] &+= cumulative[b - 1] }
            if cumulative[Self.bucketCount - 1] > 0 {
                snapshot.latencies.append(Latency(method: Self.methodLabels[m], cumulative: cumulative, sumSeconds: Double(nanos) / 1e9))
            }
        }
        for shard in shards {
            snapshot.bytesIn &+= shard.bytesIn.load(ordering: .relaxed)
            snapshot.bytesOut &+= shard.bytesOut.load(ordering: .relaxed)
        }
        snapshot.connectionsOpen = connections.load(ordering: .relaxed)
        snapshot.connectionsEvicted = evictions.load(ordering: .relaxed)
        return snapshot
    }
}
