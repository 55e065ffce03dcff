/// What the S3 listener is told: its port and whose keys it takes. Its
/// host and limits (body size, timeouts, connections) are the plain
/// server's. The S3 face is off unless a configuration is given (`--s3-port`).
package struct S3Configuration: Sendable {
    /// 0 picks a free port; `S3Server.port` tells which.
    package var port: Int
    /// The access keys configured (`--s3-credentials`, or the
    /// `LARDER_S3_ACCESS_KEY`/`LARDER_S3_SECRET_KEY` pair); nil: none were.
    package var credentials: S3Credentials?
    /// How far a request's `x-amz-date` may be from the server's clock:
    /// S3's own limit, 15 minutes.
    package var maxClockSkewSeconds: Int64 = 15 * 60

    package init(port: Int, credentials: S3Credentials? = nil) {
        self.port = port
        self.credentials = credentials
    }

    /// The keys requests are verified with: the configured ones; with none,
    /// the documented default pair, unless the server requires a token:
    /// then no key at all, since a key everyone knows would open through
    /// S3 what the token closes (every request is `403 InvalidAccessKeyId`).
    package func acceptedKeys(tokenRequired: Bool) -> S3Credentials {
        credentials ?? (tokenRequired ? .none : .defaults)
    }

    /// Whether the listener refuses everything: a token is required and no
    /// S3 keys were given (said at start-up).
    package func refusesEveryRequest(tokenRequired: Bool) -> Bool {
        acceptedKeys(tokenRequired: tokenRequired).keys.isEmpty
    }
}
