#if canImport(Glibc)
import Glibc
#endif

/// The temp folder as Foundation's `NSTemporaryDirectory()` gives it on
/// Linux (`$TMPDIR`, else `/tmp/`, with a trailing slash), for the server's
/// targets, which import FoundationEssentials only.
public enum TemporaryDirectory {
    public static var path: String {
        var path = getenv("TMPDIR").map { String(cString: $0) } ?? ""
        if path.isEmpty { path = "/tmp/" }
        return path.hasSuffix("/") ? path : path + "/"
    }
}
