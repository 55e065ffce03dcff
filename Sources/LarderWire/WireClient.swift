import FoundationEssentials
import LarderModel

/// A small blocking client for Larder's HTTP API over one keep-alive
/// connection (reopened when the server closes it).
public final class WireClient {
    public let host: String
    public let port: Int
    public var token: String?
    /// Put before every target: `/ns/w3` speaks to namespace `w3`.
    public var basePath = ""
    private var connection: HTTPClientConnection?

    public init(host: String = "127.0.0.1", port: Int) {
        self.host = host
        self.port = port
    }

    /// Percent-encodes a key for the path (segments keep their `/`), as the
    /// server and the other clients do.
    public static func encodePath(_ key: String) -> String { KeyPercentEncoding.percentEncode(key) }

    public func send(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil) throws -> ClientResponse {
        var headers = headers
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        for attempt in 0..<2 {
            do {
                if connection == nil { connection = try HTTPClientConnection(host: host, port: port) }
                let response = try connection!.request(method, basePath + target, headers: headers, body: body)
                if response.header("Connection")?.lowercased() == "close" { connection = nil }
                return response
            } catch {
                connection = nil
                if attempt == 1 { throw error }
            }
        }
        throw ClientError("unreachable")
    }

    @discardableResult
    public func put(_ key: String, _ value: [UInt8], contentType: String? = nil, headers: [(String, String)] = []) throws -> ClientResponse {
        var all = headers
        if let contentType { all.append(("Content-Type", contentType)) }
        return try send("PUT", "/store/" + Self.encodePath(key), headers: all, body: value)
    }

    @discardableResult
    public func put(_ key: String, _ text: String, contentType: String? = nil) throws -> ClientResponse {
        try put(key, Array(text.utf8), contentType: contentType)
    }

    public func get(_ key: String, headers: [(String, String)] = []) throws -> ClientResponse {
        try send("GET", "/store/" + Self.encodePath(key), headers: headers)
    }

    public func head(_ key: String, headers: [(String, String)] = []) throws -> ClientResponse {
        try send("HEAD", "/store/" + Self.encodePath(key), headers: headers)
    }

    @discardableResult
    public func delete(_ key: String) throws -> ClientResponse {
        try send("DELETE", "/store/" + Self.encodePath(key))
    }

    /// `GET /store/<prefix>?<query>`; prefix is "" or ends in "/".
    public func list(_ prefix: String = "", query: String = "") throws -> ClientResponse {
        try send("GET", "/store/" + Self.encodePath(prefix) + (query.isEmpty ? "" : "?" + query))
    }

    /// `DELETE /store/<prefix>`: everything under it ("" for all).
    @discardableResult
    public func deletePrefix(_ prefix: String = "") throws -> ClientResponse {
        try send("DELETE", "/store/" + Self.encodePath(prefix))
    }
}
