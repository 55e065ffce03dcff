import LarderHTTP

/// Told of an S3 request's answer by the connection (`HTTPAnswerObserver`,
/// as the plain API's journal is): counts it by operation and status, and
/// records it in its namespace's journal with its operation's name. One
/// per request, made once the operation and namespace are known.
final class S3AnswerRecord: HTTPAnswerObserver {
    let op: String
    /// The target in path style (`/bucket/key?query`).
    let target: String
    /// Whose journal it goes in; nil: none (a refused request whose
    /// namespace is not open).
    let namespace: (any S3Namespace)?
    let counts: S3RequestCounts

    init(op: String, target: String, namespace: (any S3Namespace)?, counts: S3RequestCounts) {
        self.op = op
        self.target = target
        self.namespace = namespace
        self.counts = counts
    }

    func answered(_ request: borrowing HTTPAnsweredRequest, with response: borrowing HTTPResponse) {
        // A reset before the request was handled sent no status (the journal's `null`).
        let sent = response.networkFault == .reset(handled: false) ? 0 : response.status.code
        counts.answered(op: op, status: sent)
        namespace?.record(request, response, op: op, target: target)
    }
}
