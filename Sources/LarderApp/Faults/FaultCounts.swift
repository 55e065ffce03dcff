import LarderSupport

/// How many times each fault rule fired since the server started, by
/// namespace and rule name: `larder_faults_total` on `/metrics`. One for
/// the whole server, apart from the rule books, so the counts stay
/// monotonic when rules are replaced or cleared (`DELETE /faults`) or a
/// namespace is dropped, as Prometheus counters must.
final class FaultCounts: Sendable {
    struct Key: Hashable, Sendable {
        /// nil: the default namespace.
        let namespace: String?
        let rule: String
    }

    private let counts = Locked([Key: Int]())

    func fired(_ rule: String, in namespace: String?) {
        counts.withLock { $0[Key(namespace: namespace, rule: rule), default: 0] += 1 }
    }

    /// Every count, the default namespace first, then by namespace and rule.
    var all: [(key: Key, count: Int)] {
        counts.withLock { $0.map { (key: $0.key, count: $0.value) } }.sorted { a, b in
            (a.key.namespace == nil ? 0 : 1, a.key.namespace ?? "", a.key.rule)
                < (b.key.namespace == nil ? 0 : 1, b.key.namespace ?? "", b.key.rule)
        }
    }
}
