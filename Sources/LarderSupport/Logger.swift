import LarderModel
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Severity of a log line, lowest first. `info` is where request lines go.
public enum LogLevel: Int, Comparable, Sendable, CaseIterable {
    case trace, debug, info, notice, warning, error, critical

    public init?(name: String) {
        switch name.lowercased() {
        case "trace": self = .trace
        case "debug": self = .debug
        case "info": self = .info
        case "notice": self = .notice
        case "warning", "warn": self = .warning
        case "error": self = .error
        case "critical": self = .critical
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        case .critical: "critical"
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A small line logger. Each line goes out in one `write(2)` so lines from
/// different threads never interleave; the level check is a plain comparison
/// so a disabled level costs nothing on the request path.
public struct Logger: Sendable {
    public let level: LogLevel
    public let label: String
    private let fd: Int32

    public init(label: String, level: LogLevel, fd: Int32 = 2) {
        self.label = label
        self.level = level
        self.fd = fd
    }

    /// A logger that prints nothing (tests that do not want noise).
    public static func silent(label: String = "larder") -> Logger {
        Logger(label: label, level: .critical, fd: -1)
    }

    @inline(__always)
    public func enabled(_ l: LogLevel) -> Bool { fd >= 0 && l >= level }

    public func log(_ l: LogLevel, _ message: @autoclosure () -> String) {
        guard enabled(l) else { return }
        write(l, message())
    }

    /// Logs whatever the level: for the few lines a user always needs,
    /// such as which port the server listens on.
    public func always(_ l: LogLevel, _ message: String) {
        guard fd >= 0 else { return }
        write(l, message)
    }

    private func write(_ l: LogLevel, _ message: String) {
        var line = Logger.timestamp()
        line += " "
        line += l.name
        line += " "
        line += label
        line += ": "
        line += message
        line += "\n"
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
        bytes.removeAll()
    }

    public func trace(_ m: @autoclosure () -> String) { log(.trace, m()) }
    public func debug(_ m: @autoclosure () -> String) { log(.debug, m()) }
    public func info(_ m: @autoclosure () -> String) { log(.info, m()) }
    public func notice(_ m: @autoclosure () -> String) { log(.notice, m()) }
    public func warning(_ m: @autoclosure () -> String) { log(.warning, m()) }
    public func error(_ m: @autoclosure () -> String) { log(.error, m()) }

    /// ISO 8601 UTC with milliseconds, e.g. 2026-11-22T10:00:00.123Z.
    static func timestamp() -> String { ISO8601.format(nanos: Clock.nowNanos(), milliseconds: true) }
}
