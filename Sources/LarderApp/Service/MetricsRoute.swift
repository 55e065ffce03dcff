import LarderHTTP
import LarderRouting
import LarderStorage
import LarderValueFile
import LarderSharing
import LarderSupport

/// `GET /metrics`: Prometheus text format 0.0.4. The text is built here,
/// per scrape, from counters that cost requests no string and no lock:
/// the HTTP layer's (`HTTPServerMetrics`), the store's running totals
/// (`StoreStats`), and the change hub's counts.
struct MetricsRoute: Route {
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    let http: HTTPServerMetrics
    let store: any ValueStore
    let hub: ChangeHub
    /// nil: the store has no namespaces (`larder_namespaces` is 0).
    let namespaces: Namespaces?
    /// nil: faults are off (no `--allow-faults`), and so is their family.
    let faults: FaultCounts?
    /// The other faces' families (the S3 listener's), after these.
    let otherFaces: [any MetricsFamilies]
    /// When the server was made, seconds since 1970.
    let startTime: Double

    func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        if let answer = try ReadOnlyEndpoint.check(request, "metrics are read with GET") { return answer }
        return .respond(HTTPResponse(status: .ok, headers: [("Content-Type", Self.contentType), ("Cache-Control", "no-store")],
                                     body: .bytes(Array(render().utf8))))
    }

    func render() -> String {
        let traffic = http.snapshot()
        let stats = store.stats
        var text = ""
        text.reserveCapacity(4096 + 64 * traffic.requests.count + 1200 * traffic.latencies.count)

        Self.family(&text, "larder_http_requests_total", "counter", "HTTP answers by request method and status.")
        for r in traffic.requests {
            text += "larder_http_requests_total{method=\"\(r.method)\",status=\"\(r.status)\"} \(r.count)\n"
        }

        Self.family(&text, "larder_http_request_duration_seconds", "histogram",
                    "Time from a request's head to its answer being queued (a streamed body's transfer not included), by method.")
        for l in traffic.latencies {
            for (bound, count) in zip(HTTPServerMetrics.bucketBounds.map(Self.number) + ["+Inf"], l.cumulative) {
                text += "larder_http_request_duration_seconds_bucket{method=\"\(l.method)\",le=\"\(bound)\"} \(count)\n"
            }
            text += "larder_http_request_duration_seconds_sum{method=\"\(l.method)\"} \(Self.number(l.sumSeconds))\n"
            text += "larder_http_request_duration_seconds_count{method=\"\(l.method)\"} \(l.count)\n"
        }

        Self.single(&text, "larder_http_request_bytes_total", "counter",
                    "Bytes received on client connections (request heads and bodies).", traffic.bytesIn)
        Self.single(&text, "larder_http_response_bytes_total", "counter",
                    "Bytes sent on client connections (response heads and bodies, chunk framing included).", traffic.bytesOut)
        Self.single(&text, "larder_http_connections_open", "gauge", "Client connections open now.", traffic.connectionsOpen)
        Self.single(&text, "larder_http_connections_evicted_total", "counter",
                    "Idle connections closed at the connection limit to let a new one in.", traffic.connectionsEvicted)
        Self.single(&text, "larder_keys", "gauge", "Values stored (an expired one until the sweep removes it).", stats.keys)
        Self.single(&text, "larder_stored_bytes", "gauge", "Bytes of the value files on disk (gzip).", stats.storedBytes)
        Self.single(&text, "larder_logical_bytes", "gauge", "Bytes of the values, decompressed.", stats.logicalBytes)
        Self.single(&text, "larder_store_index_ready", "gauge",
                    "1 once the start-up scan is done (listings from the key index, exact totals above); 0 while it runs.",
                    store.isIndexReady ? 1 : 0)
        if let modes = store.compressionModes {
            Self.family(&text, "larder_compression_mode_total", "counter",
                        "Values Larder compressed since start-up, by the mode chosen from their first 64 KiB (deflate, huffman, stored).")
            for mode in CompressionMode.allCases {
                text += "larder_compression_mode_total{mode=\"\(mode.rawValue)\"} \(modes.count(mode))\n"
            }
        }
        if let durability = store.durability {
            Self.single(&text, "larder_durable_flushes_total", "counter",
                        "Flushes (syncfs) issued to make writes durable; concurrent writes share them.", durability.flushCount)
            Self.single(&text, "larder_durable_writes_total", "counter",
                        "Writes (PUT, DELETE) acknowledged after a flush made them durable.", durability.writeCount)
        }
        if let fixtures = store.fixtureStats {
            Self.single(&text, "larder_fixture_keys", "gauge", "Fixtures mounted with --fixtures (read-only, not in larder_keys).",
                        fixtures.keys)
        }
        Self.single(&text, "larder_watchers", "gauge", "GET ?wait requests waiting for a change.", hub.watcherCount)
        Self.single(&text, "larder_event_streams", "gauge", "Open /events streams.", hub.subscriberCount)
        Self.single(&text, "larder_namespaces", "gauge", "Named namespaces (/ns/<name>/) open now, the default one not counted.",
                    namespaces?.count ?? 0)
        if let faults {
            Self.family(&text, "larder_faults_total", "counter",
                        "Requests a /faults rule fired for (any fault: delay, status, drop, truncate, pace), by namespace and rule.")
            for (key, count) in faults.all {
                let namespace = key.namespace.map { "namespace=\"\(Self.labelValue($0))\"," } ?? ""
                text += "larder_faults_total{\(namespace)rule=\"\(Self.labelValue(key.rule))\"} \(count)\n"
            }
        }
        for face in otherFaces { face.render(into: &text) }
        Self.family(&text, "larder_start_time_seconds", "gauge", "When the server started, seconds since 1970.")
        text += "larder_start_time_seconds \(Self.number(startTime))\n"
        return text
    }

    private static func family(_ text: inout String, _ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    private static func single(_ text: inout String, _ name: String, _ type: String, _ help: String, _ value: some BinaryInteger) {
        family(&text, name, type, help)
        text += "\(name) \(value)\n"
    }

    /// A label value escaped as the text format wants (`\\`, `\"`, `\n`):
    /// a rule's id may hold any visible ASCII.
    static func labelValue(_ value: String) -> String {
        // By scalar: a `\r\n` is one Character, which a Character-wise replace of "\n" would miss.
        var escaped = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped.append(contentsOf: #"\\"#.unicodeScalars)
            case "\"": escaped.append(contentsOf: #"\""#.unicodeScalars)
            case "\n": escaped.append(contentsOf: #"\n"#.unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    /// A number as Prometheus clients write it: whole numbers without a
    /// fraction (`le="1"`), others in Swift's shortest exact form.
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
