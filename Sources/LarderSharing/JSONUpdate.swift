import LarderJSON
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// JSON append and merge patch as store updates: read the current value,
/// make the new one, publish it only if nothing wrote the key in between
/// (`ValueStore.update`). The one implementation behind `POST`/`PATCH
/// /store/<key>` and `EmbeddedLarder.append`; each face only maps the
/// errors (`JSONUpdateError`, `StoreError`) to its own.
public enum JSONUpdate {
    /// The largest value a JSON update reads or writes: the whole document
    /// is held in memory (parsed, and again serialized).
    public static let maxValueBytes = 32 << 20
    /// The largest JSON body an update takes, also held in memory.
    public static let maxBodyBytes = 16 << 20

    /// The update's own JSON: at most `maxBodyBytes`, strictly parsed.
    static func parseBody(_ bytes: [UInt8]) throws(JSONUpdateError) -> JSONValue {
        guard bytes.count <= maxBodyBytes else { throw .bodyTooLarge(limit: maxBodyBytes) }
        do {
            return try JSONValue.parse(bytes)
        } catch {
            throw .bodyNotJSON(error.message)
        }
    }

    /// Appends the JSON `json` to the list under `key` (an absent key
    /// starts one; see `JSONValue.appending` for a stored non-list and
    /// `unique`), if `condition` holds. Answers the outcome and the list's
    /// length after. Fails with `JSONUpdateError` for JSON that does not
    /// parse (the body, now, before anything is read), else as the store does.
    public static func append(_ json: [UInt8], unique: Bool, to key: StoreKey, in store: any ValueStore,
                              condition: WriteCondition?) -> StoreReply<(outcome: PutOutcome, count: Int)> {
        let body: JSONValue
        do { body = try parseBody(json) } catch { return .now(.failure(error)) }
        // Set by the transform of the attempt that published (a retried
        // attempt sets it again); read only once `update` has answered.
        let count = Locked(0)
        return store.update(key, condition: condition, maxValueBytes: maxValueBytes) { meta, stored in
            let current = try stored.map(parseStored)
            let (result, n) = JSONValue.appending(body, to: current, unique: unique)
            count.withLock { $0 = n }
            return UpdatedValue(bytes: result.serialized(), contentType: meta?.contentType ?? "application/json")
        }.map { outcome in (outcome, count.withLock { $0 }) }
    }

    /// Applies the JSON merge patch `json` (RFC 7396) to the JSON value
    /// under `key`, if `condition` holds; `StoreError.notFound` when absent.
    /// Answers the outcome and the patched document as stored. Fails as
    /// `append` does.
    public static func mergePatch(_ json: [UInt8], into key: StoreKey, in store: any ValueStore,
                                  condition: WriteCondition?) -> StoreReply<(outcome: PutOutcome, document: [UInt8])> {
        let patch: JSONValue
        do { patch = try parseBody(json) } catch { return .now(.failure(error)) }
        let document = Locked<[UInt8]>([])
        return store.update(key, condition: condition, maxValueBytes: maxValueBytes) { meta, stored in
            guard let stored, let meta else { throw StoreError.notFound }
            let patched = try parseStored(stored).mergePatched(with: patch).serialized()
            document.withLock { $0 = patched }
            return UpdatedValue(bytes: patched, contentType: meta.contentType)
        }.map { outcome in (outcome, document.withLock { $0 }) }
    }

    static func parseStored(_ bytes: [UInt8]) throws(JSONUpdateError) -> JSONValue {
        do {
            return try JSONValue.parse(bytes)
        } catch {
            throw .storedNotJSON(error.message)
        }
    }
}

/// Why a JSON update was refused, before or while reading the value.
public enum JSONUpdateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The update's own JSON does not parse (the parser's message).
    case bodyNotJSON(String)
    /// The stored value does not parse, so it cannot be updated as JSON.
    case storedNotJSON(String)
    /// The update's JSON is larger than `limit` bytes.
    case bodyTooLarge(limit: Int)

    public var description: String {
        switch self {
        case .bodyNotJSON(let why): "the body is not JSON: \(why)"
        case .storedNotJSON(let why): "the stored value is not JSON (\(why)), so it cannot be updated as JSON"
        case .bodyTooLarge(let limit): "the JSON body is larger than \(limit) bytes"
        }
    }
}
