#if canImport(Glibc)
import Glibc
#endif

/// A failed socket call, with the call's name and errno.
package struct SocketError: Error, CustomStringConvertible, Sendable {
    package let operation: String
    package let errno: Int32
    package let detail: String?

    init(_ operation: String, errno code: Int32 = Glibc.errno, detail: String? = nil) {
        self.operation = operation
        self.errno = code
        self.detail = detail
    }

    package var description: String {
        var text = "\(operation) failed: \(String(cString: strerror(errno))) (errno \(errno))"
        if let detail { text += " " + detail }
        return text
    }
}
