import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// A resolved TCP address to connect to, and the `Host` header naming it.
public struct WireAddress: Sendable {
    private var storage = sockaddr_storage()
    private var length: socklen_t = 0
    public let hostHeader: String
    public let description: String

    /// Every address of `host` (a name or an address; IPv6 with or without
    /// brackets), in `getaddrinfo`'s order, which may block on a name lookup.
    /// `localhost` is often `::1` first while a server listens on
    /// `127.0.0.1` only: a caller tries them in turn.
    public static func resolve(host: String, port: Int) throws(WireFailure) -> [WireAddress] {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(bare, String(port), &hints, &result)
        guard status == 0, result != nil else {
            throw .cannotConnect("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(result) }
        let named = bare.contains(":") ? "[\(bare)]" : bare
        var addresses: [WireAddress] = []
        var next = result
        while let info = next {
            addresses.append(WireAddress(info.pointee, hostHeader: "\(named):\(port)"))
            next = info.pointee.ai_next
        }
        return addresses
    }

    private init(_ info: addrinfo, hostHeader: String) {
        withUnsafeMutableBytes(of: &storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: info.ai_addr, count: Int(info.ai_addrlen)))
        }
        length = info.ai_addrlen
        self.hostHeader = hostHeader
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let numeric = getnameinfo(info.ai_addr, info.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0
        let address = numeric ? String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : hostHeader
        let port = hostHeader.split(separator: ":").last.map(String.init) ?? ""
        description = address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)"
    }

    var family: Int32 { Int32(storage.ss_family) }

    /// Calls `body` with the address as a `sockaddr`.
    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }
}
