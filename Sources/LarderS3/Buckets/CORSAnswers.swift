import LarderHTTP
import LarderSupport
import LarderStoreVocabulary

/// What S3 answers a browser by its bucket's CORS rules (`CORSRule`): a
/// preflight (`OPTIONS`, unsigned, as browsers send it) is allowed or
/// refused by the first rule that lets its origin make its method with its
/// headers; any other request naming an `Origin` gets the matching rule's
/// `Access-Control-*` headers on its answer, whatever the answer (an
/// error's too, so the page can read it). A request without `Origin` costs
/// nothing more than looking for that header.
enum CORSAnswers {
    /// The preflight's answer: 200 with the rule's headers, or S3's refusal.
    static func preflight(_ head: HTTPRequestHead, rules: [CORSRule]?) throws(S3Error) -> HTTPResponse {
        guard let origin = head.headers["Origin"] else {
            throw S3Error(.badRequest, "BadRequest", "Insufficient information. Origin request header needed.")
        }
        guard let method = head.headers["Access-Control-Request-Method"] else {
            throw S3Error(.badRequest, "BadRequest", "Invalid Access-Control-Request-Method: null")
        }
        guard let rules else { throw forbidden("CORSResponse: CORS is not enabled for this bucket.") }
        let asked = (head.headers["Access-Control-Request-Headers"] ?? "").split(separator: ",")
            .map { $0.trimmingSpaces.lowercased() }.filter { !$0.isEmpty }
        guard let rule = rules.first(where: { $0.allows(origin: origin, method: method, headers: asked) }) else {
            throw forbidden("CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, "
                + "request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.")
        }
        var headers = headers(rule, origin: origin)
        if !asked.isEmpty { headers.append(("Access-Control-Allow-Headers", asked.joined(separator: ", "))) }
        if let seconds = rule.maxAgeSeconds { headers.append(("Access-Control-Max-Age", String(seconds))) }
        headers.append(("Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"))
        return HTTPResponse(status: .ok, headers: headers)
    }

    /// The headers an answer to `origin`'s `method` request carries by `rules`.
    static func headers(rules: [CORSRule]?, origin: String, method: String) -> [(String, String)] {
        guard let rule = rules?.first(where: { $0.allows(origin: origin, method: method, headers: []) }) else { return [] }
        var headers = headers(rule, origin: origin)
        if let seconds = rule.maxAgeSeconds { headers.append(("Access-Control-Max-Age", String(seconds))) }
        headers.append(("Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"))
        return headers
    }

    private static func headers(_ rule: CORSRule, origin: String) -> [(String, String)] {
        // A rule for any origin answers `*`, and then no credentials (the Fetch standard forbids both).
        let any = rule.allowedOrigins.contains("*")
        var headers = [("Access-Control-Allow-Origin", any ? "*" : origin),
                       ("Access-Control-Allow-Methods", rule.allowedMethods.joined(separator: ", "))]
        if !any { headers.append(("Access-Control-Allow-Credentials", "true")) }
        if !rule.exposeHeaders.isEmpty { headers.append(("Access-Control-Expose-Headers", rule.exposeHeaders.joined(separator: ", "))) }
        return headers
    }

    private static func forbidden(_ message: String) -> S3Error { S3Error(.forbidden, "AccessForbidden", message) }
}

/// The CORS headers of one request's answer, known once its bucket's
/// settings are read: an answer given before then waits for them (on the
/// disk store they are known before the request is routed).
final class CORSHeaders: Sendable {
    private enum State {
        case waiting([@Sendable ([(String, String)]) -> Void])
        case known([(String, String)])
    }

    private let state = Locked(State.waiting([]))

    /// The headers for `origin`'s `method` request by the settings `settings` reads.
    init(_ settings: StoreReply<BucketSettings>, origin: String, method: String) {
        settings.whenDone { [self] result in
            let rules = (try? result.get())?.cors
            known(CORSAnswers.headers(rules: rules, origin: origin, method: method))
        }
    }

    private func known(_ headers: [(String, String)]) {
        let waiting = state.withLock { state -> [@Sendable ([(String, String)]) -> Void] in
            guard case .waiting(let waiting) = state else { return [] }
            state = .known(headers)
            return waiting
        }
        for answer in waiting { answer(headers) }
    }

    /// Runs `answer` with the headers: now if they are known, else once they are.
    func whenKnown(_ answer: @escaping @Sendable ([(String, String)]) -> Void) {
        let known = state.withLock { state -> [(String, String)]? in
            switch state {
            case .known(let headers): return headers
            case .waiting(let waiting):
                state = .waiting(waiting + [answer])
                return nil
            }
        }
        if let known { answer(known) }
    }
}
