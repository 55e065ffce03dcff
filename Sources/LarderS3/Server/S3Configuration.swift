/// What the S3 listener is told: its port and whose keys it takes. Its
/// host and limits (body size, timeouts, connections) are the plain
/// server's. The S3 face is off unless a configuration is given (`--s3-port`).
public struct S3Configuration: Sendable {
    /// 0 picks a free port; `S3Server.port` tells which.
    public var port: Int
    /// The access keys requests may be signed with.
    public var credentials: S3Credentials
    /// How far a request's `x-amz-date` may be from the server's clock:
    /// S3's own limit, 15 minutes.
    public var maxClockSkewSeconds: Int64 = 15 * 60

    public init(port: Int, credentials: S3Credentials = .defaults) {
        self.port = port
        self.credentials = credentials
    }
}
