import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// Every entry under a prefix, page after page, for the few answers that
/// need them all at once (ListBuckets: the top-level prefixes and the
/// bucket markers, both small). Object listings page instead.
enum FullListing {
    static let pageSize = 1000

    static func collect(_ store: any ValueStore, prefix: StorePrefix, group: Bool,
                        _ done: @escaping @Sendable (Result<StoreListing, any Error>) -> Void) {
        page(store, prefix: prefix, group: group, after: nil, into: nil, done)
    }

    private static func page(_ store: any ValueStore, prefix: StorePrefix, group: Bool, after: String?, into gathered: StoreListing?,
                             _ done: @escaping @Sendable (Result<StoreListing, any Error>) -> Void) {
        store.list(prefix: prefix, after: after, limit: pageSize, groupByDirectory: group).whenDone { result in
            switch result {
            case .failure(let error):
                done(.failure(error))
            case .success(let listing):
                var all = gathered ?? listing
                if gathered != nil {
                    all.values += listing.values
                    all.prefixes += listing.prefixes
                }
                all.next = listing.next
                if let next = listing.next {
                    page(store, prefix: prefix, group: group, after: next, into: all, done)
                } else {
                    done(.success(all))
                }
            }
        }
    }
}
