import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// One page of an S3 listing, gathered from as many store pages as it
/// takes: entries outside S3's prefix are passed over, keys under a common
/// prefix folded into it, until `max-keys` entries are in and one more is
/// seen (the page is truncated) or the store has no more.
final class ListingRun: @unchecked Sendable {
    enum Entry: Sendable {
        case object(ListedValue)
        /// A common prefix, as a Larder key prefix (bucket included).
        case commonPrefix(String)

        var sortKey: String {
            switch self {
            case .object(let value): value.key
            case .commonPrefix(let prefix): prefix
            }
        }
    }

    struct Page: Sendable {
        var entries: [Entry] = []
        /// Where the next page starts; nil: this is the last.
        var next: ListingCursor?
    }

    static let storePageSize = 1000

    private let store: any ValueStore
    private let request: ListObjectsOperation.Request
    /// Every key answered starts with this: the bucket's prefix and S3's
    /// (as Larder keys spell it, `S3KeyEscaping`).
    private let fullPrefix: [UInt8]
    /// S3's prefix whose last segment is `.` or `..` (no one Larder
    /// prefix): the bucket's prefix and S3's, matched against keys as S3
    /// spells them, with no early end (`fullPrefix` is then the directory).
    private let rawPrefix: [UInt8]?
    /// What the store is asked to list: `fullPrefix` up to its last `/`.
    private let storePrefix: StorePrefix?
    private let delimiter: [UInt8]
    /// The store groups by `/` itself when that is the delimiter.
    private let storeGroups: Bool
    // The run's state: touched by one continuation at a time (each store
    // page is asked for after the last one's answer was handled).
    private var page = Page()
    private var lastGroup: [UInt8]?
    private var skipUnder: [UInt8]?

    init(store: any ValueStore, request: ListObjectsOperation.Request, cursor: ListingCursor?) {
        self.store = store
        self.request = request
        let bucket = Array((request.bucket + "/").utf8)
        let escaped = S3KeyEscaping.escapePrefix(Array(request.prefix.utf8))
        rawPrefix = escaped == nil ? bucket + Array(request.prefix.utf8) : nil
        // Without one Larder prefix: the directory, the partial segment left out.
        let full = bucket + (escaped ?? S3KeyEscaping.escapePrefix(Array(request.prefix.utf8.dropLast(request.prefix.hasSuffix("..") ? 2 : 1)))!)
        fullPrefix = full
        let directory = full[..<(full.lastIndex(of: 0x2F)! + 1)]
        // A prefix that no key can have (`a//`) lists nothing.
        storePrefix = try? StorePrefix(bytes: Array(directory))
        delimiter = Array(request.delimiter.utf8)
        storeGroups = request.delimiter == "/"
        self.cursor = cursor
        if let cursor, cursor.isGroup { skipUnder = Array(cursor.key.utf8) }
    }

    private var cursor: ListingCursor?

    func start(_ done: @escaping @Sendable (Result<Page, any Error>) -> Void) {
        guard let storePrefix, request.maxKeys > 0 else { done(.success(page)); return }
        // S3's prefix inside a segment (`photo` of `photos/…`): start just
        // before it rather than at the segment's start. `after` is
        // exclusive, so the prefix less its last byte still lists a key
        // equal to the prefix. (ASCII only: a cut UTF-8 character is no key.)
        var after = cursor?.key
        if let last = fullPrefix.last, last != 0x2F, last < 0x80 {
            let before = String(decoding: fullPrefix.dropLast(), as: UTF8.self)
            if after.map({ Array($0.utf8).lexicographicallyPrecedes(Array(before.utf8)) }) ?? true { after = before }
        }
        fetch(storePrefix, after: after, done)
    }

    private func fetch(_ prefix: StorePrefix, after: String?, _ done: @escaping @Sendable (Result<Page, any Error>) -> Void) {
        store.list(prefix: prefix, after: after, limit: Self.storePageSize, groupByDirectory: storeGroups).whenDone { [self] result in
            switch result {
            case .failure(let error):
                done(.failure(error))
            case .success(let listing):
                if take(listing) {
                    done(.success(page))
                } else if let next = listing.next {
                    fetch(prefix, after: next, done)
                } else {
                    done(.success(page))
                }
            }
        }
    }

    /// Adds a store page's entries in byte order; true when the S3 page is
    /// complete (full with one more seen, or past the prefix).
    private func take(_ listing: StoreListing) -> Bool {
        var (v, p) = (0, 0)
        while v < listing.values.count || p < listing.prefixes.count {
            let entry: Entry
            if p == listing.prefixes.count
                || (v < listing.values.count && Array(listing.values[v].key.utf8).lexicographicallyPrecedes(Array(listing.prefixes[p].utf8))) {
                entry = .object(listing.values[v])
                v += 1
            } else {
                entry = .commonPrefix(listing.prefixes[p])
                p += 1
            }
            if consider(entry) { return true }
        }
        return false
    }

    /// One entry from the store; true when the page is complete.
    private func consider(_ entry: Entry) -> Bool {
        let key = Array(entry.sortKey.utf8)
        if let skip = skipUnder {
            if key.starts(with: skip) { return false }
            skipUnder = nil
        }
        if let rawPrefix {
            guard S3KeyEscaping.unescape(key).starts(with: rawPrefix) else { return false }
        } else {
            guard key.starts(with: fullPrefix) else {
                // In byte order: past the prefix, nothing after can match.
                return fullPrefix.lexicographicallyPrecedes(key)
            }
        }
        var answer = entry
        if !storeGroups, !delimiter.isEmpty, let group = self.group(of: key) {
            if group == lastGroup { return false }
            lastGroup = group
            answer = .commonPrefix(String(decoding: group, as: UTF8.self))
        }
        if page.entries.count == request.maxKeys {
            let last = page.entries[page.entries.count - 1]
            if case .commonPrefix(let prefix) = last {
                page.next = ListingCursor(key: prefix, isGroup: true)
            } else {
                page.next = ListingCursor(key: last.sortKey, isGroup: false)
            }
            return true
        }
        page.entries.append(answer)
        return false
    }

    /// The common prefix `key` (a Larder key) falls in with a delimiter
    /// other than `/` (grouped here), as a Larder key prefix; nil: none.
    private func group(of key: [UInt8]) -> [UInt8]? {
        guard let rawPrefix else {
            guard let at = Self.find(delimiter, in: key, from: fullPrefix.count) else { return nil }
            return Array(key[..<(at + delimiter.count)])
        }
        // S3's prefix is not a Larder prefix: find the delimiter after it in
        // the key as S3 spells it, and spell the group as Larder does.
        let raw = S3KeyEscaping.unescape(key)
        guard let at = Self.find(delimiter, in: raw, from: rawPrefix.count) else { return nil }
        return S3KeyEscaping.escapePrefix(Array(raw[..<(at + delimiter.count)]))
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard needle.count <= haystack.count - start else { return nil }
        var i = start
        while i + needle.count <= haystack.count {
            if haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
