import Foundation

extension Larder {
    /// Reads the value under `key`, lets `transform` change it and saves it
    /// only if no other writer saved in between (`If-Match` on the version
    /// read); when one did, reads again and retries. This is the
    /// compare-and-swap loop done right: no update is lost, however many
    /// processes update the key at once. The new version keeps the key's
    /// content type and its expiry, if it has one (to the second).
    ///
    /// - Parameters:
    ///   - type: the type the value is stored as (JSON through `coder`).
    ///   - key: the key to update.
    ///   - initial: the value to start from when the key has none (then the
    ///     save is create-only); nil: a missing key throws `notFound`.
    ///   - maxAttempts: how many lost races to accept before giving up with
    ///     `LarderError.preconditionFailed`.
    ///   - transform: may run more than once; it must not have side effects
    ///     other than on its argument.
    /// - Returns: the value as saved.
    @discardableResult
    public func update<T: Codable>(_ type: T.Type = T.self, at key: String, initial: T? = nil, maxAttempts: Int = 1000,
                                   _ transform: (inout T) throws -> Void) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            var value: T
            let condition: SaveCondition
            // The new version keeps the key's content type and expiry (to the second).
            var contentType = "application/json"
            var ttl: Duration?
            if let stored = try await fetchIfPresent(key) {
                value = try coder.decode(type, from: stored.data, key: key)
                condition = .ifMatch(stored.etag)
                contentType = stored.contentType
                ttl = stored.info.expires.map { expires in
                    .nanoseconds(max(1_000_000_000, expires.nanoseconds - Timestamp(Date()).nanoseconds))
                }
            } else if let initial {
                value = initial
                condition = .ifAbsent
            } else {
                throw LarderError.notFound(key: key)
            }
            try transform(&value)
            do {
                try await save(coder.encode(value, key: key), at: key, contentType: contentType,
                               condition: condition, ttl: ttl)
                return value
            } catch LarderError.preconditionFailed where attempt < maxAttempts {
                // Lost the race: back off a little (more after each loss,
                // randomised so the losers do not collide again) and re-read.
                let ceiling = min(50_000, 500 << min(attempt, 7))
                try await Task.sleep(nanoseconds: UInt64(Int.random(in: 0...ceiling)) * 1_000)
            }
        }
    }
}
