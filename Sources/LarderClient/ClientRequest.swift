import Foundation

/// One request as `LarderClient` builds it, before a transport sends it:
/// the target is the percent-encoded path and query from the server's root
/// (the base URL's path included).
struct ClientRequest: Sendable {
    var method: String
    var target: String
    var headers: [(name: String, value: String)] = []
    var httpBody: Data?
    /// How long the request may go with nothing arriving, in seconds.
    var timeout: TimeInterval

    /// Adds a header (the calls never set one twice).
    mutating func setValue(_ value: String, forHTTPHeaderField name: String) {
        headers.append((name, value))
    }
}
