#if canImport(Glibc)
import Glibc
#endif

/// Messages for the operator on stderr, outside the log (before logging is
/// set up, or a subcommand's answer): one write(2) each, unbuffered.
enum StandardError {
    static func write(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
