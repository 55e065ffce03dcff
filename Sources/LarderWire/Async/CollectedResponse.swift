import Foundation

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
        if let length = head.value("Content-Length").flatMap({ Int($0) }), length > 0 {
            body.reserveCapacity(min(length, Self.reserveLimit))
        }
    }

    public func responseBody(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        body.append(base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
    }
}
