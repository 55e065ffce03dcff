import Foundation
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

// What suites of several targets ask a running server: its fault rules
// (`/faults`) and its metrics (`/metrics`, read by the real Prometheus
// parser). FaultTests and MetricsTests (LarderAppTests) check those
// endpoints; the HTTP and disk-store suites use them as instruments.

/// `/faults` on a server started with `--allow-faults`.
package enum FaultRules {
    /// A server that takes fault rules.
    package static func server() throws -> TestServer {
        try TestServer { $0.allowFaults = true }
    }

    /// `PUT /faults` with `rules`; fails the test unless it is a 200.
    @discardableResult
    package static func set(_ client: WireClient, _ rules: String,
                           sourceLocation: SourceLocation = #_sourceLocation) throws -> [[String: Any]] {
        let response = try client.send("PUT", "/faults", body: Array(rules.utf8))
        #expect(response.status == 200, "PUT /faults: \(response.status) \(response.text)", sourceLocation: sourceLocation)
        return response.json?["rules"] as? [[String: Any]] ?? []
    }

    /// `GET /faults`: the rules and how often each fired.
    package static func rules(_ client: WireClient) throws -> [[String: Any]] {
        let response = try client.send("GET", "/faults")
        #expect(response.status == 200)
        return response.json?["rules"] as? [[String: Any]] ?? []
    }

    /// An answer no fault touched: `status`, and no `Larder-Fault`.
    package static func expectUntouched(_ response: ClientResponse, _ status: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == status, "\(response.status) \(response.text)", sourceLocation: sourceLocation)
        #expect(response.header("Larder-Fault") == nil, sourceLocation: sourceLocation)
    }
}

/// One `/metrics` scrape, parsed by `prometheus_client` (run as `python3`).
package struct MetricsScrape {
    package struct Sample {
        package let name: String
        package let labels: [String: String]
        package let value: Double
    }
    package let samples: [Sample]
    /// Family name (as the parser names it) → type.
    package let types: [String: String]

    /// The sample with exactly these labels; 0 when absent (a counter not yet seen).
    package func value(_ name: String, _ labels: [String: String] = [:]) -> Double {
        samples.first { $0.name == name && $0.labels == labels }?.value ?? 0
    }

    static let parser = """
        import json, sys
        from prometheus_client.parser import text_string_to_metric_families
        samples, types = [], {}
        for family in text_string_to_metric_families(sys.stdin.read()):
            types[family.name] = family.type
            for s in family.samples:
                samples.append({"name": s.name, "labels": s.labels, "value": s.value})
        print(json.dumps({"samples": samples, "types": types}))
        """

    /// Parses Prometheus text with `prometheus_client`; a parse error fails the test.
    package static func parse(_ text: [UInt8]) throws -> MetricsScrape {
        let (status, output, error) = try StoreTestSupport.run("/usr/bin/env", ["python3", "-c", parser], stdin: text)
        guard status == 0, let object = try JSONSerialization.jsonObject(with: Data(output)) as? [String: Any] else {
            throw ClientError("prometheus_client could not parse the scrape (\(status)): \(error)\n\(String(decoding: text, as: UTF8.self))")
        }
        let samples = (object["samples"] as? [[String: Any]] ?? []).map {
            Sample(name: $0["name"] as? String ?? "", labels: $0["labels"] as? [String: String] ?? [:],
                   value: ($0["value"] as? NSNumber)?.doubleValue ?? .nan)
        }
        return MetricsScrape(samples: samples, types: object["types"] as? [String: String] ?? [:])
    }

    /// Sends `request` on a new connection and reads until the server
    /// closes it (send `Connection: close`): every byte that came back.
    package static func exchange(_ port: Int, _ request: [UInt8]) throws -> [UInt8] {
        let connection = try HTTPClientConnection(port: port, timeout: 10)
        defer { connection.close() }
        try connection.send(request)
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            var pfd = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 1000) >= 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { received += chunk[0..<n]; continue }
            if n == 0 { return received }
            if errno != EAGAIN && errno != EINTR { return received }
        }
        throw ClientError("the server did not close the connection")
    }

    /// `GET /metrics` with `headers`, closing the connection.
    package static func request(_ headers: String = "") -> [UInt8] {
        Array("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\(headers)Connection: close\r\n\r\n".utf8)
    }

    /// A scrape on its own connection: the parsed samples and the exact
    /// bytes that went each way.
    package static func take(_ port: Int, headers: String = "") throws -> (scrape: MetricsScrape, sent: Int, received: Int) {
        let request = request(headers)
        let response = try exchange(port, request)
        let text = String(decoding: response, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n"), text.hasPrefix("HTTP/1.1 200") else {
            throw ClientError("the scrape failed: \(text.prefix(300))")
        }
        #expect(text[..<split.lowerBound].contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"))
        return (try parse(Array(text[split.upperBound...].utf8)), request.count, response.count)
    }
}

extension Bytes {
    /// `count` bytes of JSON records with repeated keys and a few varying
    /// fields: what a document store holds (and compresses well).
    package static func jsonRecords(_ count: Int) -> [UInt8] {
        var text = "["
        var i = 0
        let states = ["pending", "shipped", "delivered", "returned"]
        while text.utf8.count < count {
            text += "{\"id\":\(i),\"customer\":\"user\(i * 7919 % 100_003)@example.com\",\"status\":\"\(states[i % 4])\","
            text += "\"total\":\(i * 31 % 10_000).\(i % 100),\"tags\":[\"a\",\"b\"]},\n"
            i += 1
        }
        return Array(text.utf8.prefix(count))
    }
}
