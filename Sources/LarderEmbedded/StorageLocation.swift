import Foundation

/// Where `EmbeddedLarder(named:in:)` keeps its folder.
public enum StorageLocation: Sendable, Hashable {
    /// The user's documents: kept and (on Apple platforms) backed up.
    /// Linux: `$HOME/Documents`.
    case documents
    /// Caches the system may clear. Linux: `$XDG_CACHE_HOME`, else `~/.cache`.
    case caches
    /// `NSTemporaryDirectory()`: gone at the next reboot, or sooner.
    case temporary
    /// A directory of your choosing.
    case directory(URL)

    /// The directory this location stands for on this system.
    public var url: URL {
        let fm = FileManager.default
        switch self {
        case .documents:
            if let url = fm.urls(for: .documentDirectory, in: .userDomainMask).first { return url }
            return fm.homeDirectoryForCurrentUser.appendingPathComponent("Documents", isDirectory: true)
        case .caches:
            #if os(Linux)
            // Foundation on Linux already follows XDG, but say so explicitly:
            // an empty or relative XDG_CACHE_HOME is ignored, as the spec asks.
            if let xdg = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
                return URL(fileURLWithPath: xdg, isDirectory: true)
            }
            #endif
            if let url = fm.urls(for: .cachesDirectory, in: .userDomainMask).first { return url }
            return fm.homeDirectoryForCurrentUser.appendingPathComponent(".cache", isDirectory: true)
        case .temporary:
            return URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
        case .directory(let url):
            return url
        }
    }
}
