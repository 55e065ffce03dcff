import Foundation
import LarderModel

/// A small blocking client for Larder's HTTP API over one keep-alive
/// connection (reopened when the server closes it).
package final class WireClient {
    package let host: String
    package let port: Int
    package var token: String?
    /// Put before every target: `/ns/w3` speaks to namespace `w3`.
    package var basePath = ""
    private var connection: HTTPClientConnection?

    package init(host: String = "127.0.0.1", port: Int) {
        self.host = host
        self.port = port
    }

    /// Percent-encodes a key for the path (segments keep their `/`), as the
    /// server and the other clients do.
    package static func encodePath(_ key: String) -> String { KeyPercentEncoding.percentEncode(key) }

    package func send(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil) throws -> ClientResponse {
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
    package func put(_ key: String, _ value: [UInt8], contentType: String? = nil, headers: [(String, String)] = []) throws -> ClientResponse {
        var all = headers
        if let contentType { all.append(("Content-Type", contentType)) }
        return try send("PUT", "/store/" + Self.encodePath(key), headers: all, body: value)
    }

    @discardableResult
    package func put(_ key: String, _ text: String, contentType: String? = nil) throws -> ClientResponse {
        try put(key, Array(text.utf8), contentType: contentType)
    }

    package func get(_ key: String, headers: [(String, String)] = []) throws -> ClientResponse {
        try send("GET", "/store/" + Self.encodePath(key), headers: headers)
    }

    package func head(_ key: String, headers: [(String, String)] = []) throws -> ClientResponse {
        try send("HEAD", "/store/" + Self.encodePath(key), headers: headers)
    }

    @discardableResult
    package func delete(_ key: String) throws -> ClientResponse {
        try send("DELETE", "/store/" + Self.encodePath(key))
    }

    /// `GET /store/<prefix>?<query>`; prefix is "" or ends in "/".
    package func list(_ prefix: String = "", query: String = "") throws -> ClientResponse {
        try send("GET", "/store/" + Self.encodePath(prefix) + (query.isEmpty ? "" : "?" + query))
    }

    /// `DELETE /store/<prefix>`: everything under it ("" for all).
    @discardableResult
    package func deletePrefix(_ prefix: String = "") throws -> ClientResponse {
        try send("DELETE", "/store/" + Self.encodePath(prefix))
    }
}
