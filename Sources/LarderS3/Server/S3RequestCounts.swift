import LarderSupport

/// What the S3 listener counts for `/metrics`: answers by S3 operation and
/// status (`larder_s3_requests_total{op,status}`). The listener's bytes,
/// latency and connections are its `HTTPServer`'s own counters, apart from
/// the plain API's; this is what only the S3 face knows, the operation.
///
/// One lock per answer, held for one dictionary add: the S3 face is not the
/// plain API's hot path, and its operations (a few dozen names) times the
/// statuses it answers keep the dictionary small.
package final class S3RequestCounts: Sendable {
    struct Key: Hashable, Sendable {
        let op: String
        /// 0: no answer was sent (a `drop: before` fault).
        let status: Int
    }

    private let counts = Locked([Key: Int]())

    package init() {}

    func answered(op: String, status: Int) {
        counts.withLock { $0[Key(op: op, status: status), default: 0] += 1 }
    }

    /// Answers of one operation with one status.
    package struct Count: Sendable, Equatable {
        package let op: String
        package let status: Int
        package let count: Int
    }

    /// Every count, by operation, then status.
    package var all: [Count] {
        counts.withLock { $0.map { Count(op: $0.key.op, status: $0.key.status, count: $0.value) } }
            .sorted { ($0.op, $0.status) < ($1.op, $1.status) }
    }
}
