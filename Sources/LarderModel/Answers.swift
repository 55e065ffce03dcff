/// The small JSON bodies of successful answers (docs/http-api.md), one type each.

/// `DELETE /store/<prefix>/`: `{"deleted": N}`.
public struct DeletedCount: Codable, Sendable, Hashable {
    public var deleted: Int
    public init(deleted: Int) { self.deleted = deleted }
}

/// `POST /store/<prefix>/`: `{"key": "<prefix>/<id>"}`, the generated key.
public struct CreatedKey: Codable, Sendable, Hashable {
    public var key: String
    public init(key: String) { self.key = key }
}

/// `POST /store/<key>` (append): `{"count": N}`, the array's length after it.
public struct AppendCount: Codable, Sendable, Hashable {
    public var count: Int
    public init(count: Int) { self.count = count }
}

/// `POST /snapshot`: `{"restored": N, "skipped": M}`.
public struct RestoreCount: Codable, Sendable, Hashable {
    public var restored: Int
    public var skipped: Int
    public init(restored: Int, skipped: Int) {
        self.restored = restored
        self.skipped = skipped
    }
}

/// `GET /healthz`: `{"status": "ok"}`.
public struct HealthStatus: Codable, Sendable, Hashable {
    public var status: String
    public init(status: String) { self.status = status }
    public static let ok = HealthStatus(status: "ok")
}
