import LarderHTTP
import LarderRouting

/// The rules of a namespace's name (`/ns/<name>/`): 1 to 64 bytes of
/// `A-Z a-z 0-9 _ . -`, not `.` or `..`. A name that passes is safe as one
/// directory name and one SQL identifier part: it has no `/`, no `%`, no
/// NUL and nothing that a path or a schema name would read specially.
package enum NamespaceName {
    package static let maxBytes = 64

    /// `name` when it follows the rules; else the 400 `invalid_namespace`.
    /// It is checked as sent: a percent-escape is a `%`, which no name has.
    package static func check(_ name: Substring) throws(HTTPError) -> String {
        let bytes = name.utf8
        let dot = UInt8(ascii: ".")
        guard !bytes.isEmpty, bytes.count <= maxBytes, bytes.allSatisfy(isAllowed),
              !bytes.allSatisfy({ $0 == dot }) || bytes.count > 2 else {
            throw HTTPError(.badRequest, .invalidNamespace,
                            "a namespace name is 1 to \(maxBytes) bytes of A-Z a-z 0-9 _ . - and not . or ..")
        }
        return String(name)
    }

    static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }
}

/// Where a request's path is in the namespaces: `/ns/<name><inner>`.
enum NamespacePath {
    static let prefix = "/ns/"

    /// The path a namespaced request has inside its namespace (`/store/k`
    /// for `/ns/w3/store/k`); nil for a path outside `/ns/<name>/`.
    static func inner(_ path: Substring) -> Substring? {
        guard let rest = RouteTable.Match.prefix(prefix).rest(of: path) else { return nil }
        return inner(afterPrefix: rest)
    }

    /// For `/ns/<name>/...`: the name, and how many bytes of `path` come
    /// before the path inside the namespace (`/ns/<name>`); nil for any
    /// other path, and for a name no namespace has (empty, or longer than
    /// `NamespaceName.maxBytes`). Every request's path is asked (the
    /// server's table asks before its lookup), so the path's bytes are read
    /// in place, and one outside `/ns/` fails at its second byte.
    static func split(_ path: Substring) -> (name: String, prefixBytes: Int)? {
        let found = path.utf8.withContiguousStorageIfAvailable { bytes -> (String, Int)? in
            let slash = UInt8(ascii: "/")
            guard bytes.count > 5, bytes[1] == UInt8(ascii: "n"), bytes[0] == slash, bytes[2] == UInt8(ascii: "s"),
                  bytes[3] == slash else { return nil }
            let start = 4, limit = min(bytes.count, start + NamespaceName.maxBytes + 1)
            var end = start
            while end < limit, bytes[end] != slash { end += 1 }
            guard end > start, end < limit else { return nil }
            return (String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self), end)
        }
        return found ?? nil
    }

    /// The same for what follows `/ns/` (`w3/store/k`).
    static func inner(afterPrefix rest: Substring) -> Substring? {
        guard let slash = rest.utf8.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        return rest[slash...]
    }
}
