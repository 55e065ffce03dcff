import LarderModel
import LarderHTTP
import LarderRouting
import LarderSupport
import Synchronization

/// What the fault middleware does to one request: the rule that fired,
/// how long to hold the answer, the status to answer with instead of
/// running the route (nil: the route runs), and what the connection does
/// instead of answering plainly (nil: nothing).
package struct FaultDecision: Sendable {
    package let name: String
    package let delayNanos: UInt64
    let status: Int?
    let network: FaultRule.NetworkEffect?

    /// The status line the rule answers with, if it does.
    package var httpStatus: HTTPStatus? { status.map(FaultMiddleware.status) }

    /// What the rule does to the connection, in the HTTP layer's words, for
    /// a face that acts it out itself (S3): `drop: before` is a reset
    /// before the request is handled.
    package var networkFault: HTTPNetworkFault? {
        switch network {
        case nil: nil
        case .dropBefore?: .reset(handled: false)
        case .dropAfter?: .reset(handled: true)
        case .truncate(let bytes)?: .truncate(bytes: bytes)
        case .pace(let rate)?: .pace(bytesPerSecond: rate)
        }
    }
}

/// The fault rules in force (`PUT /faults`), with their counters. Shared by
/// the `/faults` route and the middleware; one lock guards the rules, the
/// counters and the random generator, so a rule with `count: N` fires
/// exactly N times however many requests race for it.
///
/// Rules are tried in order; the first that matches the request, has count
/// left and wins its probability draw fires. A rule whose draw fails lets
/// the next one try, so `[{10 % 503}, {100 % delay}]` delays the other 90 %.
package final class FaultBook: Sendable {
    struct Entry: Sendable {
        let name: String
        let rule: FaultRule
        /// Times it may still fire; nil: no limit.
        var remaining: Int?
        /// Requests it matched (and drew for), and times it fired.
        var matched = 0
        var fired = 0
    }

    private struct State: Sendable {
        var entries: [Entry] = []
        var seed: UInt64?
        var random = FaultRandom(seed: nil)
    }

    private let state = Locked(State())
    /// The namespace these rules are of (nil: the default one), and where
    /// their firings are counted for `/metrics`.
    private let namespace: String?
    private let counts: FaultCounts

    init(namespace: String? = nil, counts: FaultCounts = FaultCounts()) {
        self.namespace = namespace
        self.counts = counts
    }
    /// How many rules are in force, written under the lock: with none (the
    /// usual state of a server started with the flag) a request costs one
    /// atomic load, not the lock every connection would contend for.
    private let count = Atomic<Int>(0)

    /// Rules at most: every request walks them under the lock.
    static let maxRules = 1000

    /// Replaces every rule; `seed` makes the probability and jitter draws
    /// repeat from one `PUT` to the next (nil: the system generator).
    func replace(with rules: [FaultRule], seed: UInt64?) throws(HTTPError) {
        let entries = try Self.named(rules, after: [])
        state.withLock { st in
            st.entries = entries
            st.seed = seed
            st.random = FaultRandom(seed: seed)
            count.store(entries.count, ordering: .releasing)
        }
    }

    /// Appends rules after the current ones, whose counters go on.
    func append(_ rules: [FaultRule]) throws(HTTPError) {
        try state.withLock { (st) throws(HTTPError) in
            st.entries += try Self.named(rules, after: st.entries)
            count.store(st.entries.count, ordering: .releasing)
        }
    }

    /// Removes every rule; returns how many there were.
    func clear() -> Int {
        state.withLock { st in
            defer { st.entries = []; st.seed = nil; st.random = FaultRandom(seed: nil); count.store(0, ordering: .releasing) }
            return st.entries.count
        }
    }

    /// Names rules by their `id`, else `rule-<position>` in the whole set.
    /// Names are unique: they are what `Larder-Fault` reports.
    private static func named(_ rules: [FaultRule], after existing: [Entry]) throws(HTTPError) -> [Entry] {
        guard existing.count + rules.count <= maxRules else {
            throw HTTPError(.badRequest, .invalidRule, "at most \(maxRules) rules may be in force")
        }
        var names = Set(existing.map(\.name))
        var entries: [Entry] = []
        for (i, rule) in rules.enumerated() {
            let name = rule.id ?? "rule-\(existing.count + i + 1)"
            guard names.insert(name).inserted else {
                throw HTTPError(.badRequest, .invalidRule, "rule \(i + 1): the name \(JSON.quote(name)) is taken; give each rule its own id")
            }
            entries.append(Entry(name: name, rule: rule, remaining: rule.count))
        }
        return entries
    }

    /// The fault for this request, if a rule fires; counts it.
    package func decide(method: HTTPMethod, path: Substring) -> FaultDecision? {
        guard count.load(ordering: .acquiring) > 0 else { return nil }
        let name = method.description
        // The request's decoded key: computed once, and only if a key rule asks.
        var key: [UInt8]?? = .none
        let decodedKey = { () -> [UInt8]? in
            if case .some(let k) = key { return k }
            let k = FaultRule.storeKey(of: path)
            key = .some(k)
            return k
        }
        let decision = state.withLock { st -> FaultDecision? in
            for i in st.entries.indices {
                let rule = st.entries[i].rule
                guard st.entries[i].remaining != 0, rule.matches(method: name, path: path, key: decodedKey) else { continue }
                st.entries[i].matched += 1
                if rule.probability < 1 {
                    guard rule.probability > 0, Double.random(in: 0..<1, using: &st.random) < rule.probability else { continue }
                }
                st.entries[i].fired += 1
                if let left = st.entries[i].remaining { st.entries[i].remaining = left - 1 }
                let jitter = rule.jitterMs > 0 ? Int.random(in: 0...rule.jitterMs, using: &st.random) : 0
                return FaultDecision(name: st.entries[i].name,
                                     delayNanos: UInt64(rule.delayMs + jitter) * 1_000_000,
                                     status: rule.status, network: rule.network)
            }
            return nil
        }
        if let decision { counts.fired(decision.name, in: namespace) }
        return decision
    }

    /// `GET /faults`: every rule as given, with its name, the count it has
    /// left (`remaining`, null without a count) and how often it matched and fired.
    var list: FaultList {
        state.withLock { st in
            FaultList(rules: st.entries.map { e in
                let r = e.rule
                return FaultRuleStatus(id: e.name, prefix: r.prefix, methods: r.methods, delayMs: r.delayMs,
                                       jitterMs: r.jitterMs, status: r.status, drop: r.drop, truncate: r.truncate,
                                       bytesPerSecond: r.bytesPerSecond, probability: r.probability,
                                       count: r.count, remaining: e.remaining, matched: e.matched, fired: e.fired)
            }, seed: st.seed)
        }
    }
}

/// The draws of the fault rules: the system generator, or SplitMix64 from a
/// seed when a test wants the same sequence every run.
struct FaultRandom: RandomNumberGenerator, Sendable {
    private var seeded: UInt64?

    init(seed: UInt64?) { seeded = seed }

    mutating func next() -> UInt64 {
        guard var s = seeded else {
            var system = SystemRandomNumberGenerator()
            return system.next()
        }
        s &+= 0x9E37_79B9_7F4A_7C15
        seeded = s
        var z = s
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
