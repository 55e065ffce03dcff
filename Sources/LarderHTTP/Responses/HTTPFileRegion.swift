/// A response body that is a region of an open file, sent with
/// `sendfile(2)`: the bytes go from the page cache to the socket without
/// passing through the server's memory. Plain descriptor, offset and
/// length, so the HTTP layer needs no store types; whoever owns the
/// descriptor is kept by `owner` and told `onClose` once, when the response
/// is done, dropped, or its connection dies.
///
/// `prefix` is sent before the file's bytes (a client's own gzip header for
/// a body stored as sent); it is small and comes from memory.
///
/// `@unchecked Sendable`: built on one thread and handed with the response
/// to the connection's queue, which alone uses it afterwards (`close` is
/// called there, or on the building thread if the response is never sent).
public final class HTTPFileRegion: @unchecked Sendable {
    public let prefix: [UInt8]
    public let fd: Int32
    public let offset: Int64
    public let length: Int64
    private var onClose: (() -> Void)?

    public init(prefix: [UInt8] = [], fd: Int32, offset: Int64, length: Int64, onClose: @escaping () -> Void) {
        self.prefix = prefix
        self.fd = fd
        self.offset = offset
        self.length = length
        self.onClose = onClose
    }

    /// Bytes of the body: the prefix and the file's part.
    public var totalLength: Int64 { Int64(prefix.count) + length }

    /// Releases the descriptor's owner; later calls do nothing.
    public func close() {
        let done = onClose
        onClose = nil
        done?()
    }

    // A region dropped without `close` (a response replaced by middleware)
    // still releases its owner.
    deinit { close() }
}
