import LarderValueFile
import LarderStoreVocabulary

/// What an S3 request names: the service (`/`), a bucket (`/bucket`,
/// `/bucket/`) or an object (`/bucket/key`, the key's bytes
/// percent-decoded: `/` inside a key is a plain character of it). Path
/// style, or virtual-host style when the `Host` is `<bucket>.localhost`
/// (then the whole path is the key).
enum S3Path: Equatable {
    case service
    case bucket(String)
    case object(bucket: String, key: [UInt8])
    case invalid(String)

    init(_ path: Substring, host: String? = nil) {
        self.init(path, virtualHost: host.flatMap(Self.virtualHostBucket))
    }

    /// `virtualHost`: the bucket the `Host` names (`virtualHostBucket`), if any.
    init(_ path: Substring, virtualHost: String?) {
        // A path from the HTTP layer is ASCII (it percent-encodes the rest).
        let trimmed = path.hasPrefix("/") ? path.dropFirst() : path
        if let bucket = virtualHost {
            if trimmed.isEmpty { self = .bucket(bucket); return }
            guard let key = try? StoreKey.percentDecode(trimmed) else {
                self = .invalid("a '%' in the object key is not followed by two hex digits")
                return
            }
            self = .object(bucket: bucket, key: key)
            return
        }
        if trimmed.isEmpty { self = .service; return }
        let slash = trimmed.firstIndex(of: "/")
        let bucket = String(slash.map { trimmed[..<$0] } ?? trimmed)
        guard !bucket.isEmpty, !bucket.utf8.contains(0x25) else {
            self = .invalid("the bucket name is not valid")
            return
        }
        guard let slash else { self = .bucket(bucket); return }
        let rest = trimmed[trimmed.index(after: slash)...]
        if rest.isEmpty { self = .bucket(bucket); return }
        guard let key = try? StoreKey.percentDecode(rest) else {
            self = .invalid("a '%' in the object key is not followed by two hex digits")
            return
        }
        self = .object(bucket: bucket, key: key)
    }

    /// The bucket the path names, if any.
    var bucket: String? {
        switch self {
        case .bucket(let b), .object(let b, _): b
        case .service, .invalid: nil
        }
    }

    static let virtualHostSuffix = ".localhost"

    /// `photos` of `Host: photos.localhost:9000`; nil for any other host.
    static func virtualHostBucket(_ host: String) -> String? {
        // An ASCII host (any a client sends) by bytes; lower-casing and
        // splitting it as Characters cost more than routing the request.
        let utf8 = host.utf8
        guard utf8.allSatisfy({ $0 < 0x80 }) else { return unicodeVirtualHostBucket(host) }
        let b = utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
        var end = b.count
        if let colon = b.lastIndex(of: 0x3A), b.last != 0x5D, b[(colon + 1)...].allSatisfy({ (0x30...0x39).contains($0) }) {
            end = colon
        }
        let suffix = virtualHostSuffix.utf8
        guard end > suffix.count, b[(end - suffix.count)..<end].elementsEqual(suffix) else { return nil }
        return String(decoding: b[..<(end - suffix.count)], as: UTF8.self)
    }

    /// `virtualHostBucket` of a host that is not ASCII.
    private static func unicodeVirtualHostBucket(_ host: String) -> String? {
        var name = Substring(host.lowercased())
        if let colon = name.lastIndex(of: ":"), !name.hasSuffix("]"), name[name.index(after: colon)...].allSatisfy(\.isNumber) {
            name = name[..<colon]
        }
        guard name.hasSuffix(virtualHostSuffix), name.count > virtualHostSuffix.count else { return nil }
        return String(name.dropLast(virtualHostSuffix.count))
    }
}
