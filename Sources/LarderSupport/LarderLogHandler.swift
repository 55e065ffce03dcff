import LarderModel
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Larder's log line as a swift-log `LogHandler`:
/// `2026-11-22T10:00:00.123Z info larder.http: GET /store/k 200 5B 0.1ms`
/// (UTC time with milliseconds, level, label, message), then ` key=value`
/// for any metadata, sorted by key. The `larder` executable bootstraps
/// `LoggingSystem` with it; an app that embeds Larder bootstraps its own
/// backend instead and gets Larder's lines there.
///
/// Each line goes out in one `write(2)` so lines from different threads
/// never interleave. The level check happens in `Logger` before a message
/// is built, so a disabled level costs a comparison on the request path.
public struct LarderLogHandler: LogHandler {
    public let label: String
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    /// Where lines go: standard error unless a test says otherwise.
    private let fd: Int32

    public init(label: String, level: Logger.Level = .info, fd: Int32 = STDERR_FILENO,
                metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider) {
        self.label = label
        self.logLevel = level
        self.fd = fd
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var line = ISO8601.format(nanos: Clock.nowNanos(), milliseconds: true)
        line += " "
        line += event.level.rawValue
        line += " "
        line += label
        line += ": "
        line += event.message.description
        var extra = metadata
        if let provided = metadataProvider?.get() { extra.merge(provided) { _, new in new } }
        if let explicit = event.metadata { extra.merge(explicit) { _, new in new } }
        if let error = event.error { extra["error"] = "\(error)" }
        for key in extra.keys.sorted() {
            line += " "
            line += key
            line += "="
            line += extra[key]!.description
        }
        line += "\n"
        Self.write(line, to: fd)
    }

    /// Writes the whole line, retrying on EINTR and short writes; a failing
    /// descriptor (nobody reading) drops the line rather than stopping work.
    private static func write(_ line: String, to fd: Int32) {
        var bytes = Array(line.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { raw in
                Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
            }
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += n
        }
    }
}
