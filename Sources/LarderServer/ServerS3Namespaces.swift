import LarderApp
import LarderHTTP
import LarderS3

/// The namespaces the S3 listener works in: the default one (the server's
/// own store, journal and fault rules) and the named ones of the
/// `Namespaces` registry, which a key bound to a namespace makes on first
/// use, as a first request under `/ns/<name>/` does (under the same
/// `--max-namespaces`). A dropped namespace is gone for S3 too: the next
/// request makes it afresh, empty.
struct ServerS3Namespaces: S3Namespaces {
    let defaultNamespace: any S3Namespace
    /// nil: the store has no namespaces (the server refuses keys bound to one at start).
    let namespaces: Namespaces?

    func namespace(_ name: String) throws(S3NamespaceRefusal) -> any S3Namespace {
        guard let namespaces else {
            throw S3NamespaceRefusal(status: .notImplemented, code: "NotImplemented", message: "this server's store has no namespaces")
        }
        do {
            return S3NamespaceView(try namespaces.world(name))
        } catch {
            let code = error.code == .namespaceLimit ? "NamespaceLimit" : "InternalError"
            throw S3NamespaceRefusal(status: error.status, code: code, message: error.message)
        }
    }

    func existingNamespace(_ name: String) -> (any S3Namespace)? {
        namespaces?.existing(name).map(S3NamespaceView.init)
    }
}
