import Foundation
import LarderWire
#if canImport(Glibc)
import Glibc
#endif

/// A loopback socket that listens but never accepts: a client's connect
/// succeeds (the kernel completes it) and no answer ever comes.
///
/// With `listening: false` the port is bound and never listened on, so a
/// connect is refused; while this object lives no other test can take the
/// port, which a stopped server's freed port does not promise.
package final class SilentListener {
    package let port: Int
    private let fd: Int32

    package init(listening: Bool = true) throws {
        (fd, port) = try Self.loopbackSocket(backlog: listening ? 4 : nil)
    }

    /// A TCP socket bound to 127.0.0.1 on a port the kernel picks, listening
    /// with `backlog` unless it is nil; the one loopback binder of the tests.
    package static func loopbackSocket(backlog: Int32?) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && (backlog.map { listen(fd, $0) == 0 } ?? true)
                    && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            close(fd)
            throw ClientError("cannot listen on loopback: errno \(code)")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    deinit { close(fd) }
}
