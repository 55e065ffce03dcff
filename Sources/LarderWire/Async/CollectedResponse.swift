import FoundationEssentials

/// A `ResponseSink` that keeps the whole answer: its head and its body.
///
/// `@unchecked Sendable`: it is filled on the connection's queue while an
/// exchange runs and read by the caller only after the exchange's
/// completion, which orders the two.
public final class CollectedResponse: ResponseSink, @unchecked Sendable {
    public private(set) var head: ResponseHead?
    public private(set) var body = Data()
    /// The most a body may reserve up front from its `Content-Length`.
    private static let reserveLimit = 16 << 20

    public init() {}

    public func responseHead(_ head: ResponseHead) {
        self.head = head
    }

    public func responseBody(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        // Reserved at the first byte, not at the head: a HEAD answer's
        // Content-Length is the GET body's, with no body to hold.
        if body.isEmpty, let length = head?.value("Content-Length").flatMap({ Int($0) }), length > bytes.count {
            body.reserveCapacity(min(length, Self.reserveLimit))
        }
        body.append(base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
    }
}
