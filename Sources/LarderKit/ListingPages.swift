/// The pages of a listing as an `AsyncSequence`: each page is fetched when
/// iteration reaches it, following `next` until the last page.
public struct ListingPages: AsyncSequence, Sendable {
    public typealias Element = ListingPage
    public typealias FetchPage = @Sendable (_ after: String?, _ limit: Int) async throws -> ListingPage

    let pageSize: Int
    let fetchPage: FetchPage

    public init(pageSize: Int, fetchPage: @escaping FetchPage) {
        self.pageSize = Swift.max(1, pageSize)
        self.fetchPage = fetchPage
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let pageSize: Int
        let fetchPage: FetchPage
        var after: String?
        var done = false

        public mutating func next() async throws -> ListingPage? {
            guard !done else { return nil }
            let page = try await fetchPage(after, pageSize)
            after = page.next
            done = page.next == nil
            return page
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(pageSize: pageSize, fetchPage: fetchPage)
    }

    /// Every key's info across all pages, in byte order.
    public func values() async throws -> [ValueInfo] {
        var all: [ValueInfo] = []
        for try await page in self { all += page.keys }
        return all
    }
}
