#if canImport(Glibc)
import Glibc
#endif

/// A failed socket call, with the call's name and errno.
public struct SocketError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let errno: Int32
    public let detail: String?

    init(_ operation: String, errno code: Int32 = Glibc.errno, detail: String? = nil) {
        self.operation = operation
        self.errno = code
        self.detail = detail
    }

    public var description: String {
        var text = "\(operation) failed: \(String(cString: strerror(errno))) (errno \(errno))"
        if let detail { text += " " + detail }
        return text
    }
}
