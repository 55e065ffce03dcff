import Dispatch
import LarderSupport

/// Writes a connection's log lines about its requests: the access line of
/// each answer, and the one error line of a response body that failed after
/// its head went out. Every line names the request by its redacted target
/// (`TargetRedaction`), so a secret in the URL never reaches a log.
struct AccessLog {
    let logger: Logger
    /// Whether access lines are written, read once: the level is fixed at
    /// start, and asking swift-log's logger on every answer costs a
    /// runtime exclusivity check in its storage.
    private let infoEnabled: Bool

    init(logger: Logger) {
        self.logger = logger
        infoEnabled = logger.enabled(.info)
    }

    /// An answer whose body is still going out: its line is written when
    /// the last byte is queued (or never, when the body fails).
    struct Pending {
        let request: HTTP1ConnectionState.Request?
        let status: Int
        var bytes: Int64
    }

    /// `METHOD target status bytesB millisecondsms`, at info level.
    func answered(_ request: HTTP1ConnectionState.Request?, status: Int, bytes: Int64, now: UInt64) {
        guard infoEnabled else { return }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - (request?.started ?? now)) / 1e6
        let ms = (elapsed * 100).rounded() / 100
        logger.info("\(request?.method.description ?? "-") \(Self.target(request)) \(status) \(bytes)B \(ms)ms")
    }

    func answered(_ pending: Pending, now: UInt64) {
        answered(pending.request, status: pending.status, bytes: pending.bytes, now: now)
    }

    /// `request` was answered by resetting the connection (a `drop` fault).
    func reset(_ request: HTTP1ConnectionState.Request?, now: UInt64) {
        guard infoEnabled else { return }
        logger.info("\(request?.method.description ?? "-") \(Self.target(request)) reset by a fault, no answer")
    }

    /// The body of the answer to `request` failed after its head was sent.
    func bodyFailed(_ request: HTTP1ConnectionState.Request?, _ error: any Error) {
        logger.error("response body of \(Self.target(request)) failed: \(error)")
    }

    /// The target as every line prints it.
    static func target(_ request: HTTP1ConnectionState.Request?) -> String {
        request.map { TargetRedaction.redact($0.target) } ?? "-"
    }
}
