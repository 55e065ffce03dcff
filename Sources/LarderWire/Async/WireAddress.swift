import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A resolved TCP address to connect to, and the `Host` header naming it.
public struct WireAddress: Sendable {
    fileprivate(set) var storage = sockaddr_storage()
    fileprivate(set) var length: socklen_t = 0
    public let hostHeader: String
    public let description: String

    /// Resolves `host` (a name or an address; IPv6 with or without
    /// brackets) with `getaddrinfo`, which may block on a name lookup.
    public init(host: String, port: Int) throws(WireFailure) {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(bare, String(port), &hints, &result)
        guard status == 0, let info = result else {
            throw .cannotConnect("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(result) }
        withUnsafeMutableBytes(of: &storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(info.pointee.ai_addrlen)))
        }
        length = info.pointee.ai_addrlen
        let named = bare.contains(":") ? "[\(bare)]" : bare
        hostHeader = "\(named):\(port)"
        description = hostHeader
    }

    var family: Int32 { Int32(storage.ss_family) }

    /// Calls `body` with the address as a `sockaddr`.
    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }
}
