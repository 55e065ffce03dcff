import LarderHTTP
import LarderStorage

/// What the S3 listener asks of the server it is part of: the namespace a
/// request's access key works in. The server (`LarderApp`) gives it when
/// it starts the listener; LarderS3 knows nothing of how namespaces are
/// made, limited, dropped or journaled, only this.
package protocol S3Namespaces: Sendable {
    /// The default namespace (keys with no namespace of their own).
    var defaultNamespace: any S3Namespace { get }
    /// Namespace `name`, made on first use (as a request under
    /// `/ns/<name>/` makes it); a refusal (`--max-namespaces`) says why.
    func namespace(_ name: String) throws(S3NamespaceRefusal) -> any S3Namespace
    /// Namespace `name` if it is open now: a refused request makes none.
    func existingNamespace(_ name: String) -> (any S3Namespace)?
}

/// One namespace as the S3 face sees it: its store, its journal, its
/// fault rules.
package protocol S3Namespace: AnyObject, Sendable {
    var store: any ValueStore { get }
    /// Whether fault rules may fire here (`--allow-faults`): without, the
    /// listener asks nothing per request.
    var hasFaults: Bool { get }
    /// Records an answered S3 request in the namespace's journal (nothing
    /// with `--journal 0`): `op` its operation, `target` its target in path
    /// style (`/bucket/key?query`, whichever addressing the client used).
    func record(_ request: borrowing HTTPAnsweredRequest, _ response: borrowing HTTPResponse, op: String, target: String)
    /// The fault a rule of the namespace fires for this request, if any.
    /// `storePath`: the request's path as the plain API spells it
    /// (`/store/<bucket>/<key>`, `/store/<bucket>/`, `/store/`), which the
    /// rules' prefixes are compared with.
    func fault(method: HTTPMethod, storePath: String) -> S3Fault?
}

/// What a fault rule does to one S3 request (the listener acts it out).
package struct S3Fault: Sendable {
    /// The rule's name (`Larder-Fault`).
    package let rule: String
    package let delayNanos: UInt64
    /// Answer with this status (as S3's XML error) instead of running the operation.
    package let status: HTTPStatus?
    /// `.reset(handled: false)`: reset before the operation runs
    /// (`drop: before`); any other: done to the operation's answer.
    package let network: HTTPNetworkFault?

    package init(rule: String, delayNanos: UInt64, status: HTTPStatus?, network: HTTPNetworkFault?) {
        self.rule = rule
        self.delayNanos = delayNanos
        self.status = status
        self.network = network
    }
}

/// A namespace the server will not make (its limit, a store that cannot
/// open): answered as S3's error with this status and code.
package struct S3NamespaceRefusal: Error, Sendable {
    package let status: HTTPStatus
    package let code: String
    package let message: String

    package init(status: HTTPStatus, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }
}
