import Foundation
import LarderSupport
import LarderWire
#if canImport(Glibc)
import Glibc
#endif

/// Hosts of their own on this machine, for partition tests: each host is a
/// Linux network namespace (`ip netns`), joined to another (or to the test's
/// own namespace) by a veth pair, a cable with an address at each end. A
/// link can be cut (one end down: to the other side the network goes
/// silent) and healed. Real kernel networking; all
/// addresses are private and never leave the machine.
///
/// Needs root and iproute2. The namespaces go when the lab is released,
/// and at start-up those of test processes that are gone.
package final class NetworkLab: Sendable {
    /// A cable between two hosts (`nil`: the test's own namespace).
    package struct Link: Sendable {
        package let hosts: (String?, String?)
        /// Each end's device and address, in the order of `hosts`.
        package let devices: (String, String)
        package let addresses: (String, String)
    }

    /// Whether namespaces can be made here: root and `ip`.
    package static var isAvailable: Bool { geteuid() == 0 && ip != nil }

    private static let ip: String? = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .first(where: FileManager.default.isExecutableFile(atPath:))

    /// This lab's namespaces by host name.
    private let namespaces: [String: String]
    /// Names this lab's devices and subnets apart from other labs'.
    private let tag: String
    private let subnet: Int
    private let linkCount = Locked(0)
    /// Each lab of this process takes the next 10.S.0.0/16.
    private static let nextSubnet = Locked(Int.random(in: 16...250))

    /// Makes a namespace for each of `hosts`, its loopback up.
    package init(hosts: [String]) throws {
        _ = Self.staleSwept
        tag = String((0..<4).map { _ in "0123456789abcdef".randomElement()! })
        // Not one this machine routes already (another lab's, a VPN's, a bridge's).
        let routes = (try? Self.run(["-4", "route", "show"])) ?? ""
        subnet = Self.nextSubnet.withLock { next -> Int in
            var candidate = next
            for _ in 16...250 where routes.contains("10.\(candidate).") {
                candidate = candidate == 250 ? 16 : candidate + 1
            }
            next = candidate == 250 ? 16 : candidate + 1
            return candidate
        }
        var made: [String: String] = [:]
        for host in hosts { made[host] = "larder-\(getpid())-\(tag)-\(host)" }
        namespaces = made
        do {
            for name in made.values {
                try Self.run(["netns", "add", name])
                try Self.run(["-n", name, "link", "set", "lo", "up"])
            }
        } catch {
            for name in made.values { _ = try? Self.run(["netns", "del", name]) }
            throw error
        }
    }

    deinit {
        for name in namespaces.values { _ = try? Self.run(["netns", "del", name]) }
    }

    /// The command prefix that runs a program on `host`.
    package func launcher(_ host: String) -> [String] {
        [Self.ip ?? "ip", "netns", "exec", namespaces[host]!]
    }

    /// The namespace's name (for `ip -n`, `ip netns exec`).
    package func namespace(_ host: String) -> String { namespaces[host]! }

    /// Joins `a` and `b` (nil: the test's own namespace) by a cable; `a`'s
    /// end is 10.S.N.1, `b`'s 10.S.N.2 (a /30 of their own).
    package func connect(_ a: String?, _ b: String?) throws -> Link {
        let n = linkCount.withLock { count -> Int in count += 1; return count }
        let devices = ("l\(tag)\(n)a", "l\(tag)\(n)b")
        let addresses = ("10.\(subnet).\(n).1", "10.\(subnet).\(n).2")
        try Self.run(["link", "add", devices.0, "type", "veth", "peer", "name", devices.1])
        do {
            for (host, device, address) in [(a, devices.0, addresses.0), (b, devices.1, addresses.1)] {
                if let host { try Self.run(["link", "set", device, "netns", namespaces[host]!]) }
                try Self.run(Self.in(host.map { namespaces[$0]! }, ["addr", "add", address + "/30", "dev", device]))
                try Self.run(Self.in(host.map { namespaces[$0]! }, ["link", "set", device, "up"]))
            }
        } catch {
            // Deleting either end deletes the pair, wherever it now is.
            _ = try? Self.run(Self.in(a.map { namespaces[$0]! }, ["link", "del", devices.0]))
            _ = try? Self.run(["link", "del", devices.0])
            throw error
        }
        return Link(hosts: (a, b), devices: devices, addresses: addresses)
    }

    /// Takes the first host's end down. To the second host the network
    /// goes silent: what it sends vanishes (the kernel drops it at the
    /// dead peer) and nothing arrives, with no error and no reset, as when
    /// a switch between them dies. The first host loses its route there.
    /// (`tc netem` would do the same, but its kernel module is not on
    /// every machine.)
    package func cut(_ link: Link) throws {
        try Self.run(Self.in(link.hosts.0.map { namespaces[$0]! }, ["link", "set", link.devices.0, "down"]))
    }

    /// Brings the end up again: its route comes back, and connections that
    /// outlived the cut carry on.
    package func heal(_ link: Link) throws {
        try Self.run(Self.in(link.hosts.0.map { namespaces[$0]! }, ["link", "set", link.devices.0, "up"]))
    }

    /// `ip link show` of both ends, for a test's log.
    package func describe(_ link: Link) -> String {
        [(link.hosts.0, link.devices.0), (link.hosts.1, link.devices.1)].map { host, device in
            ((try? Self.run(Self.in(host.map { namespaces[$0]! }, ["-br", "link", "show", "dev", device]))) ?? "?")
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }.joined(separator: "; ")
    }

    private static func `in`(_ namespace: String?, _ arguments: [String]) -> [String] {
        namespace.map { ["-n", $0] + arguments } ?? arguments
    }

    @discardableResult
    private static func run(_ arguments: [String]) throws -> String {
        guard let ip else { throw ClientError("no ip command (iproute2)") }
        let result = try ProcessRunner.run(ip, arguments, timeout: 30)
        guard result.status == 0 else { throw ClientError("ip \(arguments.joined(separator: " ")): \(result.stderr)") }
        return result.stdoutText
    }

    /// Once per process: namespaces left by test processes that are gone
    /// (killed at a deadline) are deleted.
    private static let staleSwept: Void = {
        guard let listing = try? run(["netns", "list"]) else { return }
        for line in listing.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            let parts = name.split(separator: "-")
            guard parts.count >= 4, parts[0] == "larder", let pid = Int32(parts[1]), pid != getpid() else { continue }
            if kill(pid, 0) == 0 || errno == EPERM { continue }
            _ = try? run(["netns", "del", name])
        }
    }()
}
