import Foundation
import LarderApp
import LarderRouting
import LarderServer
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// `/metrics`, read by the real Prometheus parser (`prometheus_client`,
/// run as `python3`), against counts the test knows exactly: the requests
/// it made, the bytes it sent and received, the files on disk.
@Suite(.blockingLane) struct MetricsTests {
    /// The scrape helpers live in LarderTestSupport (`MetricsScrape`): the
    /// HTTP and disk-store suites read `/metrics` too.
    typealias Scrape = MetricsScrape

    static func parse(_ text: [UInt8]) throws -> Scrape { try MetricsScrape.parse(text) }
    static func exchange(_ port: Int, _ request: [UInt8]) throws -> [UInt8] { try MetricsScrape.exchange(port, request) }
    static func scrapeRequest(_ headers: String = "") -> [UInt8] { MetricsScrape.request(headers) }
    static func scrape(_ port: Int, headers: String = "") throws -> (scrape: Scrape, sent: Int, received: Int) {
        try MetricsScrape.take(port, headers: headers)
    }

    @Test(.diskStoreOnly("compares the totals with the value files")) func countersRiseByExactlyWhatWasDone() throws {
        let server = try TestServer()
        let value = Array(repeating: UInt8(ascii: "v"), count: 1024)
        let (before, _, scrape1Received) = try Self.scrape(server.port)

        // One connection, pipelined, its last request closing it.
        func request(_ line: String, _ body: [UInt8] = [], close: Bool = false) -> [UInt8] {
            var head = "\(line) HTTP/1.1\r\nHost: localhost\r\n"
            if !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
            if close { head += "Connection: close\r\n" }
            return Array((head + "\r\n").utf8) + body
        }
        let batch = request("PUT /store/m/a", value) + request("PUT /store/m/b", Array(value.prefix(100)))
            + request("PUT /store/m/a", value) + request("GET /store/m/a") + request("GET /store/m/missing")
            + request("DELETE /store/m/b") + request("HEAD /store/m/a", close: true)
        let answers = try Self.exchange(server.port, batch)
        // (A status line may follow a body on the same line: the bodies are all 'v'.)
        let statuses = String(decoding: answers, as: UTF8.self).components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
        #expect(statuses == ["201", "201", "204", "200", "404", "204", "200"])

        let (after, scrape2Sent, _) = try Self.scrape(server.port)
        func delta(_ name: String, _ labels: [String: String] = [:]) -> Double {
            after.value(name, labels) - before.value(name, labels)
        }
        let requests = "larder_http_requests_total"
        #expect(delta(requests, ["method": "PUT", "status": "201"]) == 2)
        #expect(delta(requests, ["method": "PUT", "status": "204"]) == 1)
        // The first scrape is counted once its answer is queued: in the second.
        #expect(delta(requests, ["method": "GET", "status": "200"]) == 2)
        #expect(delta(requests, ["method": "GET", "status": "404"]) == 1)
        #expect(delta(requests, ["method": "DELETE", "status": "204"]) == 1)
        #expect(delta(requests, ["method": "HEAD", "status": "200"]) == 1)
        let total = after.samples.filter { $0.name == requests }.reduce(0) { $0 + $1.value }
        #expect(total == 8, "every answer so far: the first scrape and seven requests")

        let latency = "larder_http_request_duration_seconds"
        for (method, count) in [("PUT", 3.0), ("GET", 3), ("DELETE", 1), ("HEAD", 1)] {
            #expect(delta(latency + "_count", ["method": method]) == count, "\(method) observations")
            #expect(after.value(latency + "_bucket", ["method": method, "le": "+Inf"]) == after.value(latency + "_count", ["method": method]))
            #expect(after.value(latency + "_sum", ["method": method]) > 0)
        }

        // Bytes: everything the test sent before the second scrape was
        // rendered (its own request included), and everything it received
        // before that (the first scrape's answer included, not the second's).
        #expect(delta("larder_http_request_bytes_total") == Double(batch.count + scrape2Sent))
        #expect(delta("larder_http_response_bytes_total") == Double(answers.count + scrape1Received))

        // The store's totals: m/a is left, 1024 bytes, and its file on disk.
        #expect(after.value("larder_keys") == 1)
        #expect(after.value("larder_logical_bytes") == 1024)
        let files = S.valueFiles(server.dataDirectory)
        #expect(files.count == 1)
        let onDisk = files.compactMap {
            try? FileManager.default.attributesOfItem(atPath: server.dataDirectory + "/values/" + $0)[.size] as? Int
        }.reduce(0, +)
        #expect(after.value("larder_stored_bytes") == Double(onDisk))
        // 1 KiB whole, under a page: one stored block (the disk store does not
        // deflate what fits one block anyway), Larder's header and gzip's trailer.
        #expect(onDisk > 1024 && onDisk < 4096, "1 KiB in one stored block: \(onDisk)")
    }

    @Test func theWholeTextParsesWithTheRightTypes() throws {
        let server = try TestServer()
        #expect(try server.client().put("t/k", "x").status == 201)
        let response = try server.client().send("GET", "/metrics")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        let scrape = try Self.parse(response.body)
        // prometheus_client names a counter's family without `_total`.
        let expected = ["larder_http_requests": "counter", "larder_http_request_duration_seconds": "histogram",
                        "larder_http_request_bytes": "counter", "larder_http_response_bytes": "counter",
                        "larder_http_connections_open": "gauge", "larder_keys": "gauge", "larder_stored_bytes": "gauge",
                        "larder_logical_bytes": "gauge", "larder_watchers": "gauge", "larder_event_streams": "gauge",
                        "larder_start_time_seconds": "gauge", "larder_durable_flushes": "counter",
                        "larder_durable_writes": "counter"]
        for (family, type) in expected {
            #expect(scrape.types[family] == type, "\(family): \(scrape.types[family] ?? "missing")")
        }
        let buckets = scrape.samples.filter { $0.name == "larder_http_request_duration_seconds_bucket" && $0.labels["method"] == "PUT" }
        #expect(buckets.map { $0.labels["le"] ?? "" }
                == ["0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"])
        #expect(zip(buckets, buckets.dropFirst()).allSatisfy { $0.value <= $1.value }, "buckets are cumulative")
        let start = scrape.value("larder_start_time_seconds")
        #expect(abs(start - Date().timeIntervalSince1970) < 600)
        #expect(scrape.value("larder_http_connections_open") >= 1)
        #expect(try server.client().send("HEAD", "/metrics").status == 200)
    }

    @Test func gaugesAndAnswersTheHTTPLayerGives() throws {
        let server = try TestServer { $0.http.maxBodyBytes = 1000 }
        let client = server.client()
        let etag = try #require(try client.put("g/k", "v").header("ETag"))
        let before = try Self.scrape(server.port).scrape

        // A watch that times out after a second, an event stream, a few open connections.
        let port = server.port
        let watch = Background { () -> ClientResponse in
            let connection = try HTTPClientConnection(port: port, timeout: 10)
            return try connection.request("GET", "/store/g/k?wait=1", headers: [("If-None-Match", etag)])
        }
        #expect(WatchTests.waitForWatchers(server, 1))
        let feed = try SSEClient(port: server.port, target: "/events")
        defer { feed.close() }
        #expect(try feed.readHead() == 200)
        let during = try Self.scrape(server.port).scrape
        #expect(during.value("larder_watchers") == 1)
        #expect(during.value("larder_event_streams") == 1)
        #expect(during.value("larder_http_connections_open") >= 3, "the watch, the stream and the scrape")
        #expect(try watch.wait().status == 304)

        // Answers given before any route runs: a malformed head, a body over the limit.
        let garbage = try server.connection(timeout: 5)
        try garbage.send("NOT A REQUEST\r\n\r\n")
        #expect(try garbage.readResponse().status == 400)
        #expect(try client.send("PUT", "/store/g/big", body: Array(repeating: 1, count: 2000)).status == 413)

        feed.close()
        let after = try Self.scrape(server.port).scrape
        func delta(_ name: String, _ labels: [String: String]) -> Double { after.value(name, labels) - before.value(name, labels) }
        #expect(delta("larder_http_requests_total", ["method": "GET", "status": "304"]) == 1)
        #expect(delta("larder_http_requests_total", ["method": "other", "status": "400"]) == 1)
        #expect(delta("larder_http_requests_total", ["method": "PUT", "status": "413"]) == 1)
        // The watch waited its second, and its time counts the wait: a GET
        // above the 1 s bucket (how far above is the machine's business).
        let latency = "larder_http_request_duration_seconds_bucket"
        #expect(delta(latency, ["method": "GET", "le": "+Inf"]) - delta(latency, ["method": "GET", "le": "1"]) >= 1)
        #expect(after.value("larder_watchers") == 0)
        let gone = Poll.holds(within: Poll.patience) { (try? Self.scrape(port).scrape.value("larder_event_streams")) == 0 }
        #expect(gone, "the closed event stream is still counted")
    }
}
