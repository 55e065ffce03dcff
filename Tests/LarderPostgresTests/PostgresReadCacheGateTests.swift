@testable import LarderPostgres
import LarderStorage
import LarderSupport
import LarderTestSupport
import LarderValueFile
import Testing
import LarderStoreVocabulary

/// The read cache's gate around this server's own writes, with no database:
/// a read that asked the database before or during a write must not leave
/// what it found in the cache once the write has ended, and none fills the
/// key's stripe while the write is in flight. Two reads on either side of a
/// commit would otherwise share an epoch, and the one that saw the older
/// value could insert it after the other had answered with the newer.
@Suite(.blockingLane) struct PostgresReadCacheGateTests {
    let zlib = ZlibPool(level: 1)

    func value(_ text: String, version: UInt64) -> StoredValue {
        let meta = ValueMetadata(key: "k", contentType: "text/plain", size: UInt64(text.utf8.count), version: version,
                                 modifiedNanos: 0)
        // The file's bytes are not looked at here: the cache hands back what it was given.
        let entry = ValueCache.Entry(metadata: meta, file: Array(text.utf8), headerLength: 0, identity: Array(text.utf8),
                                     etag: meta.etag, gzipETag: meta.gzipETag)
        return StoredValue(cached: entry, zlib: zlib)
    }

    func cached(_ cache: PostgresReadCache, _ key: StoreKey) -> String? {
        cache.lookup(key).map { String(decoding: $0.identity, as: UTF8.self) }
    }

    @Test func noReadFillsTheStripeOfAWriteInFlightNorAfterItWithAnEarlierEpoch() throws {
        let cache = PostgresReadCache(capacity: 1 << 20)
        cache.feedRead(began: Clock.monotonicNanos(), clean: true)  // the feed vouches for the cache
        let key = try StoreKey("k")

        let before = cache.epoch(key)  // a read that asked the database before the write began
        cache.writeBegins("k")
        let during = cache.epoch(key)  // and one that asked while it was in flight
        cache.insert(key, value("old", version: 1), epoch: during)
        #expect(cached(cache, key) == nil, "a read filled the cache while a write to its key was in flight")

        cache.writeEnds("k")
        cache.insert(key, value("old", version: 1), epoch: before)
        cache.insert(key, value("old", version: 1), epoch: during)
        #expect(cached(cache, key) == nil, "a read begun before the write ended filled the cache after it")

        let after = cache.epoch(key)
        cache.insert(key, value("new", version: 2), epoch: after)
        #expect(cached(cache, key) == "new")
    }

    /// Another key's stripe is not held up by the write, and a reset holds up every stripe.
    @Test func aWriteHoldsOnlyItsStripeAndAResetHoldsThemAll() throws {
        let cache = PostgresReadCache(capacity: 1 << 20)
        cache.feedRead(began: Clock.monotonicNanos(), clean: true)
        let stripe = { (name: String) in PostgresReadCache.stripe(Array(name.utf8)) }
        let otherName = try #require((0..<100).map { "other/\($0)" }.first { stripe($0) != stripe("k") })
        let other = try StoreKey(otherName)
        cache.writeBegins("k")
        let epoch = cache.epoch(other)
        cache.insert(other, value("o", version: 1), epoch: epoch)
        cache.writeEnds("k")
        #expect(cached(cache, other) == "o", "a write held up a read of another stripe")

        cache.resetBegins()
        let during = cache.epoch(other)
        cache.insert(other, value("o2", version: 2), epoch: during)
        #expect(cached(cache, other) == nil, "a read filled the cache during a reset")
        cache.resetEnds()
        let after = cache.epoch(other)
        cache.insert(other, value("o3", version: 3), epoch: after)
        #expect(cached(cache, other) == "o3")
    }
}
