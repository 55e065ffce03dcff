// Every module that logs imports LarderSupport, which re-exports swift-log:
// `Logger` in Larder's sources is `Logging.Logger`.
@_exported import Logging

extension Logger {
    /// A logger that prints nothing (tests and library callers that did
    /// not ask for lines), whatever `LoggingSystem` was bootstrapped with.
    public static func silent(label: String = "larder") -> Logger {
        Logger(label: label) { _ in SwiftLogNoOpLogHandler() }
    }

    /// Whether a line at `level` would be written: the check to make
    /// before doing work only such a line needs (the access log's
    /// redaction and timing).
    @inlinable
    public func enabled(_ level: Logger.Level) -> Bool { logLevel <= level }

    /// Logs whatever the level: for the few lines a user always needs,
    /// such as which port the server listens on.
    public func always(_ level: Logger.Level, _ message: Logger.Message,
                       file: String = #fileID, function: String = #function, line: UInt = #line) {
        handler.log(event: LogEvent(level: level, message: message, metadata: nil, source: nil,
                                    file: file, function: function, line: line))
    }
}

extension Logger.Level {
    /// The level named `name` (`--log-level`), in any case; `warn` is `warning`.
    public init?(name: String) {
        let lower = name.lowercased()
        self.init(rawValue: lower == "warn" ? "warning" : lower)
    }
}
