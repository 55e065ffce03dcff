import LarderStorage
import LarderSupport
import LarderValueFile
import Synchronization
import LarderStoreVocabulary

/// Small values this server read lately, answered without a round trip to
/// the database (`--pg-cache-mb`; off unless set). The change feed keeps it
/// honest: every change it delivers, from any server, drops the key's
/// entry, and a write through this server drops it before it is
/// acknowledged (read-your-writes here).
///
/// What a cached read may miss: a write through another server until this
/// server's feed has read it (milliseconds after its commit, usually). So
/// entries are served only while the feed vouches for them: its last read
/// that found nothing held back began less than `freshness` ago. A feed
/// that cannot read (a cut network, a database gone) or that waits behind
/// an open transaction stops every hit within that time, and reads go to
/// the database again (and get its answer, or a 503).
///
/// Coherence with reads in flight is `ValueCache`'s: a reader takes its
/// stripe's epoch before asking the database and inserts only if no
/// invalidation of that stripe came in between. And no read fills the
/// cache for a stripe while a write of this server to it is in flight
/// (`writeBegins` to `writeEnds`, around its commit): two reads on either
/// side of a commit share an epoch, and the one that saw the older value
/// could otherwise insert it last, to be served after the other had
/// answered with the newer.
final class PostgresReadCache: Sendable {
    private let cache: ValueCache
    /// Writes of this server in flight, per stripe, and resets (`all`).
    private let writing = Locked((stripes: [Int](repeating: 0, count: PostgresReadCache.stripes), all: 0))
    /// When (`Clock.monotonicNanos`) the feed's last clean read began; 0 when
    /// the last read failed or found changes held back.
    private let freshSince = Atomic<Int64>(0)
    /// How long a clean feed read vouches for the cache: the feed reads at
    /// least every sweep (1 s) and on every notification.
    static let freshness: Int64 = 2_000_000_000
    static let stripes = 64

    init(capacity: Int) {
        cache = ValueCache(capacity: capacity, stripes: Self.stripes)
    }

    var isEnabled: Bool { cache.isEnabled }

    /// The cached value of `key`, while the feed vouches for the cache.
    func lookup(_ key: StoreKey) -> ValueCache.Entry? {
        guard cache.isEnabled else { return nil }
        let since = freshSince.load(ordering: .acquiring)
        guard since != 0, Clock.monotonicNanos() &- since < Self.freshness else { return nil }
        return cache.lookup(key.bytes)
    }

    /// Taken before asking the database for `key`; handed back to `insert`.
    func epoch(_ key: StoreKey) -> UInt64 { cache.epoch(stripe: stripe(key)) }

    /// Keeps what a read found, unless the key's stripe changed since
    /// `epoch` or a write of this server to it is in flight.
    func insert(_ key: StoreKey, _ value: StoredValue, epoch: UInt64) {
        guard cache.isEnabled else { return }
        let stripe = stripe(key)
        // Checked before the insert: a write that begins after this check
        // changes the epoch, so the insert is refused, or, if it landed
        // first, removed by that change (what it holds was read before the
        // write could commit).
        guard writing.withLock({ $0.all == 0 && $0.stripes[stripe] == 0 }),
              let entry = try? value.cacheEntry() else { return }
        cache.insert(key.bytes, entry, stripe: stripe, epoch: epoch)
    }

    /// A write of `key` through this server begins: until `writeEnds`, no
    /// read fills its stripe.
    func writeBegins(_ key: String) {
        guard cache.isEnabled else { return }
        let bytes = Array(key.utf8), stripe = Self.stripe(bytes)
        writing.withLock { $0.stripes[stripe] += 1 }
        cache.invalidate(bytes, stripe: stripe)
    }

    /// A write of `key` through this server ended (committed, refused, or
    /// its outcome unknown), before it is answered: read-your-writes here.
    func writeEnds(_ key: String) {
        guard cache.isEnabled else { return }
        let bytes = Array(key.utf8), stripe = Self.stripe(bytes)
        cache.invalidate(bytes, stripe: stripe)
        writing.withLock { $0.stripes[stripe] -= 1 }
    }

    /// A reset or a prefix delete through this server begins.
    func resetBegins() {
        guard cache.isEnabled else { return }
        writing.withLock { $0.all += 1 }
        cache.invalidateAll()
    }

    /// A reset or a prefix delete through this server ended.
    func resetEnds() {
        guard cache.isEnabled else { return }
        cache.invalidateAll()
        writing.withLock { $0.all -= 1 }
    }

    /// Everything goes (the feed fell behind the trim: what changed is unknown).
    func invalidateAll() {
        guard cache.isEnabled else { return }
        cache.invalidateAll()
    }

    private func invalidate(_ key: String) {
        let bytes = Array(key.utf8)
        cache.invalidate(bytes, stripe: Self.stripe(bytes))
    }

    /// A change the feed delivered, from whichever server.
    func apply(_ change: StoreChange) {
        guard cache.isEnabled else { return }
        if let key = change.key {
            invalidate(key)
        } else {
            cache.invalidateAll()
        }
    }

    /// The feed read what was below its mark, in a read that began at
    /// `began` (`Clock.monotonicNanos`); `clean` when nothing committed waits above the mark (and
    /// the read was not cut short).
    func feedRead(began: Int64, clean: Bool) {
        freshSince.store(clean ? began : 0, ordering: .releasing)
    }

    /// A feed read failed: until a clean one, nothing is vouched for.
    func feedFailed() { freshSince.store(0, ordering: .releasing) }

    private func stripe(_ key: StoreKey) -> Int { Self.stripe(key.bytes) }

    static func stripe(_ bytes: [UInt8]) -> Int {
        var h: UInt64 = 0xcbf29ce484222325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100000001b3 }
        return Int(h % UInt64(stripes))
    }
}
