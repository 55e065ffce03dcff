import ArgumentParser
import FoundationEssentials
import LarderWire
#if canImport(Glibc)
import Glibc
#endif

/// `larder healthcheck [--url URL]`: GET a running server's `/healthz` and
/// exit 0 when it answers 200, 1 otherwise. Docker's HEALTHCHECK runs it, so
/// the runtime image needs no curl. By default it asks the server this
/// container's environment describes: `LARDER_PORT` (8080) on loopback, or on
/// `LARDER_HOST` when that names one address rather than all of them.
struct Healthcheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a running server: GET /healthz, exit 0 when it answers 200, else 1.",
        discussion: "For container health checks (the image has no curl). /healthz needs no token."
    )

    @Option(help: "The URL to GET. (default: http://127.0.0.1:$LARDER_PORT/healthz, port 8080; LARDER_HOST when it is one address)")
    var url: String?

    @Option(help: "Seconds to wait for the whole check before it fails.")
    var timeout: Double = 5

    func validate() throws {
        guard timeout > 0 && timeout <= 3600 else { throw ValidationError("--timeout must be more than 0 and at most 3600 seconds") }
        if let url, Self.parse(url) == nil {
            throw ValidationError("--url must look like http://host[:port][/path]")
        }
    }

    func run() throws {
        // main.swift blocks the stop signals for the server's sigwait; a
        // check waits for none, so it ends on them like any command.
        var signals = stopSignals()
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        let target = url.flatMap(Self.parse) ?? Self.defaultTarget(ProcessInfo.processInfo.environment)
        // A watchdog for the connect too (the client's timeouts start after it):
        // SIGALRM's default action ends the process, which Docker counts as unhealthy.
        alarm(UInt32(timeout.rounded(.up)))
        do {
            let connection = try HTTPClientConnection(host: target.host, port: target.port, timeout: timeout)
            defer { connection.close() }
            let response = try connection.request("GET", target.path, headers: [("Connection", "close")])
            guard response.status == 200 else {
                StandardError.write("larder healthcheck: \(target.description) answered \(response.status): \(response.text)\n")
                throw ExitCode.failure
            }
            print("ok: \(target.description) answered 200")
        } catch let exit as ExitCode {
            throw exit
        } catch {
            StandardError.write("larder healthcheck: \(target.description): \(error)\n")
            throw ExitCode.failure
        }
    }

    struct Target: Equatable, CustomStringConvertible {
        var host: String
        var port: Int
        var path: String
        var description: String {
            "http://\(host.contains(":") ? "[\(host)]" : host):\(port)\(path)"
        }
    }

    /// `http://host[:port][/path]`; the host may be an IPv6 literal in brackets.
    static func parse(_ text: String) -> Target? {
        guard text.lowercased().hasPrefix("http://") else { return nil }
        let rest = text.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        var path = String(rest.dropFirst(authority.count))
        if path.isEmpty { path = "/healthz" } else if path.hasPrefix("?") { path = "/" + path }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0]
            portText = parts.count > 1 ? parts[1] : nil
        }
        guard !host.isEmpty else { return nil }
        var port = 80
        if let portText {
            guard let p = Int(portText), (1...65_535).contains(p) else { return nil }
            port = p
        }
        return Target(host: String(host), port: port, path: path)
    }

    /// The server the environment describes: a wildcard bind address is
    /// reached on loopback.
    static func defaultTarget(_ env: [String: String]) -> Target {
        var host = env["LARDER_HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1"
        if host == "0.0.0.0" { host = "127.0.0.1" }
        if host == "::" || host == "[::]" { host = "::1" }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = env["LARDER_PORT"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } ?? 8080
        return Target(host: host, port: port, path: "/healthz")
    }
}
