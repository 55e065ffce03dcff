import LarderHTTP
import LarderLog
import LarderStore

/// `/store/...`: values by key, listings and bulk deletes by prefix.
struct StoreRoutes: Sendable {
    let store: DiskStore
    let logger: Logger

    static let keyMethods = "GET, HEAD, PUT, POST, DELETE, OPTIONS"
    static let prefixMethods = "GET, HEAD, POST, DELETE, OPTIONS"

    /// `rest` is the raw (still percent-encoded) path after `/store/`.
    func handle(_ request: HTTPRequestHead, rest: Substring) throws(HTTPError) -> HTTPHandlerAction {
        let isPrefix = rest.isEmpty || rest.hasSuffix("/")
        switch request.method {
        case .get, .head, .put, .post, .delete, .options: break
        default:
            throw HTTPError(.methodNotAllowed, "method_not_allowed", "\(request.method) is not allowed here",
                            headers: [("Allow", isPrefix ? Self.prefixMethods : Self.keyMethods)])
        }
        if request.method == .options {
            return .respond(HTTPResponse(status: .noContent, headers: [("Allow", isPrefix ? Self.prefixMethods : Self.keyMethods)]))
        }
        if isPrefix {
            let prefix = try storeCall { () throws -> StorePrefix in try StorePrefix(bytes: try StoreKey.percentDecode(rest)) }
            switch request.method {
            case .get, .head: return .respond(try list(prefix, request))
            case .delete: return .respond(try bulkDelete(prefix))
            case .post: throw Self.notYet("POST to create a value under a generated key")
            default:
                throw HTTPError(.methodNotAllowed, "method_not_allowed",
                                "\(request.method) needs a key; a path ending in '/' is a prefix",
                                headers: [("Allow", Self.prefixMethods)])
            }
        }
        let key = try storeCall { () throws -> StoreKey in try StoreKey(percentEncoded: rest) }
        switch request.method {
        case .get, .head: return .respond(try get(key, request))
        case .put: return try put(key, request)
        case .delete:
            let existed = try storeCall { () throws -> Bool in try store.delete(key) }
            guard existed else { throw StoreError.notFound.httpError }
            return .respond(HTTPResponse(status: .noContent))
        case .post: throw Self.notYet("POST (append to a JSON list)")
        default: throw HTTPError(.methodNotAllowed, "method_not_allowed", "\(request.method) is not allowed here",
                                 headers: [("Allow", Self.keyMethods)])
        }
    }

    private static func notYet(_ what: String) -> HTTPError {
        HTTPError(.notImplemented, "not_implemented", "\(what) is not implemented yet")
    }

    /// Runs a store call, turning its errors into HTTP answers.
    private func storeCall<T>(_ body: () throws -> T) throws(HTTPError) -> T {
        do {
            return try body()
        } catch let error as StoreError {
            if error.isServerFault { logger.error("store: \(error)") }
            throw error.httpError
        } catch let error as HTTPError {
            throw error
        } catch {
            throw HTTPError(.internalServerError, "internal_error", "\(error)")
        }
    }

    // MARK: - Values

    private func get(_ key: StoreKey, _ request: HTTPRequestHead) throws(HTTPError) -> HTTPResponse {
        let value = try storeCall { () throws -> StoredValue in try store.open(key) }
        let meta = value.metadata
        let gzip = Self.acceptsGzip(request.headers.values("Accept-Encoding").joined(separator: ","))
        var headers: [(String, String)] = [
            ("Content-Type", meta.contentType),
            ("ETag", gzip ? value.gzipETag : value.etag),
            ("Last-Modified", HTTPDate.format(secondsSince1970: meta.modifiedSeconds)),
            ("Vary", "Accept-Encoding"),
        ]
        if gzip { headers.append(("Content-Encoding", "gzip")) }
        let length = gzip ? Int64(value.gzipLength) : Int64(meta.size)
        if request.method == .head {
            value.close()
            headers.append(("Content-Length", String(length)))
            return HTTPResponse(status: .ok, headers: headers)
        }
        let body: HTTPResponseBody = try storeCall { () throws -> HTTPResponseBody in
            if gzip {
                if let bytes = value.gzipBytes() { value.close(); return .bytes(bytes) }
                return .stream(value.gzipStream().httpBody, length: length)
            }
            if let bytes = try value.identityBytes() { value.close(); return .bytes(bytes) }
            return .stream(try value.identityStream().httpBody, length: length)
        }
        return HTTPResponse(status: .ok, headers: headers, body: body)
    }

    /// Whether `Accept-Encoding` allows gzip (a `gzip`, `x-gzip` or `*`
    /// coding with a q-value above 0).
    static func acceptsGzip(_ header: String) -> Bool {
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingSpaces.lowercased() }
            guard let coding = parts.first, coding == "gzip" || coding == "x-gzip" || coding == "*" else { continue }
            let q = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            if q > 0 { return true }
        }
        return false
    }

    private func put(_ key: StoreKey, _ request: HTTPRequestHead) throws(HTTPError) -> HTTPHandlerAction {
        let encoding: ValueUpload.Encoding
        switch request.headers["Content-Encoding"]?.trimmingSpaces.lowercased() {
        case nil, "", "identity": encoding = .identity
        case "gzip", "x-gzip": encoding = .gzip
        case let other?:
            throw HTTPError(.unsupportedMediaType, "unsupported_encoding",
                            "Content-Encoding '\(other)' is not supported; send the value as is or as gzip")
        }
        let contentType = request.headers["Content-Type"] ?? "application/octet-stream"
        let upload = try storeCall { () throws -> ValueUpload in
            try store.beginUpload(key: key, contentType: contentType, encoding: encoding)
        }
        return .receiveBody(PutBodySink(upload: upload, logger: logger))
    }

    // MARK: - Prefixes

    private func list(_ prefix: StorePrefix, _ request: HTTPRequestHead) throws(HTTPError) -> HTTPResponse {
        let query = try QueryParameters(request.query)
        let limit = try query.integer("limit", default: 1000, range: 1...10_000, clampUpper: true)
        let delimiter = query["delimiter"]
        if let delimiter, delimiter != "/", !delimiter.isEmpty {
            throw HTTPError(.badRequest, "invalid_argument", "only '/' is supported as a delimiter")
        }
        let after = query["after"].flatMap { $0.isEmpty ? nil : $0 }
        let listing = try storeCall { () throws -> StoreListing in
            try store.list(prefix: prefix, after: after, limit: limit, groupByDirectory: delimiter == "/")
        }
        var json = "{\"prefix\":\(JSON.quote(prefix.string)),\"keys\":["
        for (i, item) in listing.values.enumerated() {
            if i > 0 { json += "," }
            let meta = item.metadata
            json += "{\"key\":\(JSON.quote(item.key)),\"size\":\(meta.size),\"storedSize\":\(item.storedSize),"
            json += "\"contentType\":\(JSON.quote(meta.contentType)),\"etag\":\(JSON.quote(meta.etag)),"
            json += "\"modified\":\"\(ISO8601.format(nanos: meta.modifiedNanos))\","
            json += "\"expires\":" + (meta.expiresNanos.map { "\"\(ISO8601.format(nanos: $0))\"" } ?? "null") + "}"
        }
        json += "],\"prefixes\":["
        json += listing.prefixes.map(JSON.quote).joined(separator: ",")
        json += "],\"next\":" + (listing.next.map(JSON.quote) ?? "null") + "}"
        var response = HTTPResponse.json(.ok, json)
        if request.method == .head {
            response.headers.append(("Content-Length", String(json.utf8.count)))
            response.body = .empty
        }
        return response
    }

    private func bulkDelete(_ prefix: StorePrefix) throws(HTTPError) -> HTTPResponse {
        let deleted = try storeCall { () throws -> Int in try store.deletePrefix(prefix) }
        return .json(.ok, "{\"deleted\":\(deleted)}")
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
