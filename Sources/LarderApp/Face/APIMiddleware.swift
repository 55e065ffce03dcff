import LarderRouting

/// The Larder API's middleware chain, outermost first, checked before the
/// store is opened (so a configuration error leaves its lock alone).
/// Metrics are no link of it: the HTTP layer counts every answer, also
/// those given before any middleware runs (400, 408, 413, 431, 503).
/// 1. CORS: answers a preflight before auth (browsers send no token with
///    it) and puts its headers on every answer, 401s too;
/// 2. token auth: refuses before a body is read;
/// 3. faults: only an authorised request is faulted;
/// then the settings' own middleware.
package struct APIMiddleware: Sendable {
    let chain: [any LarderMiddleware]
    /// Fault firings, counted for the whole server (every namespace's
    /// rules too); nil without `--allow-faults`.
    let faultCounts: FaultCounts?
    /// The default namespace's fault rules.
    let faults: FaultBook?

    /// Throws a `ConfigurationError` for a token or CORS origin it cannot use.
    package init(_ settings: APISettings) throws(ConfigurationError) {
        var chain: [any LarderMiddleware] = []
        if !settings.corsOrigins.isEmpty {
            chain.append(try CORS(origins: settings.corsOrigins, tokenRequired: settings.token != nil))
        }
        if let token = settings.token { chain.append(try TokenAuth(token: token)) }
        faultCounts = settings.allowFaults ? FaultCounts() : nil
        faults = faultCounts.map { FaultBook(counts: $0) }
        if let faults { chain.append(FaultMiddleware(book: faults)) }
        self.chain = chain + settings.middleware
    }
}
