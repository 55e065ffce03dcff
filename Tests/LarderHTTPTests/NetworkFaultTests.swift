import Foundation
import LarderModel
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// Faults of the network (`drop`, `truncate`, `bytesPerSecond` in
/// `/faults` rules), seen on real sockets: a reset is ECONNRESET on recv, a
/// truncated answer is its real head and exactly N body bytes then EOF, a
/// paced transfer takes at least its length over the rate, either way. And
/// as real clients see them: curl's exit codes, Python `requests`'
/// exceptions. Times are lower bounds only: a busy machine is slower, never
/// faster.
@Suite(.blockingLane) struct NetworkFaultTests {
    static func faultServer() throws -> TestServer { try FaultRules.server() }

    static func client(_ server: TestServer, namespace: String? = nil) -> WireClient {
        let client = server.client()
        client.basePath = namespace.map { "/ns/" + $0 } ?? ""
        return client
    }

    /// How the server ended what it sent.
    enum Ending: Equatable { case reset, closed, stillOpen }

    /// Reads raw bytes from `connection` until the server closes it (EOF),
    /// resets it (ECONNRESET) or `seconds` pass with the connection open.
    /// Unlike `HTTPClientConnection.readResponse`, which takes a reset for
    /// an end, this tells them apart.
    static func readToEnd(_ connection: HTTPClientConnection, seconds: Double = 10) -> (bytes: [UInt8], ending: Ending) {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            var pfd = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&pfd, 1, 100)
            let n = chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { received += chunk[0..<n]; continue }
            if n == 0 { return (received, .closed) }
            if errno == ECONNRESET { return (received, .reset) }
        }
        return (received, .stillOpen)
    }

    /// Splits raw answer bytes into the head's lines and what follows it.
    static func split(_ bytes: [UInt8]) -> (head: [String], body: [UInt8])? {
        let end = Array("\r\n\r\n".utf8)
        guard let i = (0...max(0, bytes.count - 4)).first(where: { bytes.count >= 4 && Array(bytes[$0..<$0 + 4]) == end }) else {
            return nil
        }
        let head = String(decoding: bytes[..<i], as: UTF8.self).components(separatedBy: "\r\n")
        return (head, Array(bytes[(i + 4)...]))
    }

    static func header(_ head: [String], _ name: String) -> String? {
        head.dropFirst().first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
            .map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
    }

    static func request(_ method: String, _ target: String, body: [UInt8] = [], version: String = "1.1",
                        close: Bool = false) -> [UInt8] {
        var head = "\(method) \(target) HTTP/\(version)\r\nHost: x\r\n"
        if !body.isEmpty || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        if close { head += "Connection: close\r\n" }
        return Array((head + "\r\n").utf8) + body
    }

    /// Sends `request` on a new connection; what came back and how it ended.
    static func exchange(_ server: TestServer, _ request: [UInt8], seconds: Double = 10) throws -> (bytes: [UInt8], ending: Ending) {
        let connection = try HTTPClientConnection(port: server.port, timeout: 15)
        defer { connection.close() }
        try connection.send(request)
        return readToEnd(connection, seconds: seconds)
    }

    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    // MARK: - drop

    @Test func dropBeforeResetsAndStoresNothing() throws {
        let server = try Self.faultServer()
        let client = server.client()
        try FaultRules.set(client, #"[{"id":"cut-off","prefix":"b/","drop":"before"}]"#)
        let put = try Self.exchange(server, Self.request("PUT", "/store/b/1", body: Array("hello".utf8)))
        #expect(put.ending == .reset, "\(put.ending): \(String(decoding: put.bytes, as: UTF8.self))")
        #expect(put.bytes.isEmpty, "a dropped request gets no answer at all")
        let get = try Self.exchange(server, Self.request("GET", "/store/b/1"))
        #expect(get.ending == .reset && get.bytes.isEmpty)
        #expect(try FaultRules.rules(client).first?["fired"] as? Int == 2)
        #expect(try client.send("DELETE", "/faults").status == 200)
        FaultRules.expectUntouched(try client.get("b/1"), 404)
    }

    /// A body the route never reads: larger than the server skips, and
    /// one announced with `Expect: 100-continue`. Neither is stored.
    @Test func dropBeforeReadsNoBody() throws {
        let server = try Self.faultServer()
        let client = server.client()
        try FaultRules.set(client, #"[{"prefix":"b/","methods":["PUT"],"drop":"before"}]"#)
        let big = [UInt8](repeating: 0x61, count: 3 << 20)
        let connection = try HTTPClientConnection(port: server.port, timeout: 15)
        try connection.send("PUT /store/b/big HTTP/1.1\r\nHost: x\r\nContent-Length: \(big.count)\r\nExpect: 100-continue\r\n\r\n")
        let answer = Self.readToEnd(connection)
        connection.close()
        #expect(answer.ending == .reset)
        #expect(!String(decoding: answer.bytes, as: UTF8.self).contains("100 Continue"), "a dropped request asks for no body")
        #expect(try client.send("DELETE", "/faults").status == 200)
        FaultRules.expectUntouched(try client.get("b/big"), 404)
    }

    @Test func dropAfterStoresTheWriteThenResets() throws {
        let server = try Self.faultServer()
        let client = server.client()
        try FaultRules.set(client, #"[{"id":"lost-ack","prefix":"a/","methods":["PUT"],"drop":"after","count":1}]"#)
        let put = try Self.exchange(server, Self.request("PUT", "/store/a/1", body: Array("stored anyway".utf8)))
        #expect(put.ending == .reset)
        #expect(put.bytes.isEmpty, "the answer to a dropped write never comes")
        // The rule is on PUT only: the GET shows the write happened.
        let stored = try client.get("a/1")
        FaultRules.expectUntouched(stored, 200)
        #expect(stored.text == "stored anyway")
        // A retried create learns it from its precondition.
        let retry = try client.send("PUT", "/store/a/1", headers: [("If-None-Match", "*")], body: Array("again".utf8))
        FaultRules.expectUntouched(retry, 412)
    }

    /// Answers queued before a dropped one on the same connection (HTTP/1.1
    /// pipelining) arrive whole; then the reset.
    @Test func aPipelinedAnswerBeforeADropArrivesWhole() throws {
        let server = try Self.faultServer()
        let client = server.client()
        let value = Bytes.random(count: 300_000, seed: 3)
        #expect(try client.put("big", value).status == 201)
        try FaultRules.set(client, #"[{"prefix":"b/","drop":"before"}]"#)
        let connection = try HTTPClientConnection(port: server.port, timeout: 15)
        defer { connection.close() }
        try connection.send(Self.request("GET", "/store/big") + Self.request("GET", "/store/b/x"))
        let answer = Self.readToEnd(connection)
        #expect(answer.ending == .reset)
        let parts = try #require(Self.split(answer.bytes))
        #expect(parts.head.first == "HTTP/1.1 200 OK")
        #expect(parts.body == value, "the earlier answer was cut by the reset: \(parts.body.count) of \(value.count) bytes")
    }

    @Test func aDropCanBeDelayedAndCounted() throws {
        let server = try Self.faultServer()
        let client = server.client()
        try FaultRules.set(client, #"[{"prefix":"d/","drop":"before","delayMs":300,"count":1}]"#)
        var result: (bytes: [UInt8], ending: Ending) = ([], .stillOpen)
        let elapsed = try Self.seconds { result = try Self.exchange(server, Self.request("GET", "/store/d/1")) }
        #expect(result.ending == .reset)
        #expect(elapsed >= 0.25, "the reset came after \(elapsed) s, before its delay")
        FaultRules.expectUntouched(try client.get("d/1"), 404)
    }

    // MARK: - truncate

    /// Every kind of body: in memory (a small value), a file sent with
    /// sendfile (a large one), a stream without a length (a snapshot,
    /// chunked), and an error answer of a status rule.
    @Test func truncateSendsTheRealHeadAndNBodyBytesThenCloses() throws {
        let server = try Self.faultServer()
        let client = server.client()
        let small = Bytes.random(count: 1000, seed: 1), large = Bytes.random(count: 400_000, seed: 2)
        #expect(try client.put("t/small", small).status == 201)
        #expect(try client.put("t/large", large).status == 201)
        try FaultRules.set(client, #"""
            [{"id":"short","prefix":"t/","methods":["GET"],"truncate":100},
             {"id":"short-snapshot","prefix":"/snapshot","truncate":50},
             {"id":"short-error","prefix":"e/","status":503,"truncate":10}]
            """#)
        for (key, value) in [("t/small", small), ("t/large", large)] {
            let answer = try Self.exchange(server, Self.request("GET", "/store/\(key)"))
            #expect(answer.ending == .closed, "\(key): \(answer.ending)")
            let parts = try #require(Self.split(answer.bytes))
            #expect(parts.head.first == "HTTP/1.1 200 OK")
            #expect(Self.header(parts.head, "Content-Length") == "\(value.count)", "the head promises the whole body")
            #expect(Self.header(parts.head, "Larder-Fault") == "short")
            #expect(parts.body == Array(value.prefix(100)), "\(key): \(parts.body.count) body bytes")
        }
        let snapshot = try Self.exchange(server, Self.request("GET", "/snapshot?prefix=t/"))
        #expect(snapshot.ending == .closed)
        let snapshotParts = try #require(Self.split(snapshot.bytes))
        #expect(Self.header(snapshotParts.head, "Transfer-Encoding") == "chunked")
        #expect(!String(decoding: snapshotParts.body, as: UTF8.self).hasSuffix("0\r\n\r\n"), "no last chunk")
        let error = try Self.exchange(server, Self.request("GET", "/store/e/1"))
        let errorParts = try #require(Self.split(error.bytes))
        #expect(errorParts.head.first?.hasPrefix("HTTP/1.1 503") == true)
        #expect(errorParts.body.count == 10 && Int(Self.header(errorParts.head, "Content-Length") ?? "") ?? 0 > 10)
        #expect(error.ending == .closed)
    }

    /// A truncated answer ends its connection (what follows it on a
    /// keep-alive connection is not answered); HTTP/1.0 the same; HEAD has
    /// no body to cut and `truncate: 0` sends the head alone.
    @Test func truncateClosesAKeepAliveConnection() throws {
        let server = try Self.faultServer()
        let client = server.client()
        #expect(try client.put("t/k", "0123456789abcdef").status == 201)
        try FaultRules.set(client, #"[{"prefix":"t/","methods":["GET","HEAD"],"truncate":4},{"prefix":"z/","truncate":0}]"#)
        let pipelined = try Self.exchange(server, Self.request("GET", "/store/t/k") + Self.request("GET", "/healthz"))
        let parts = try #require(Self.split(pipelined.bytes))
        #expect(parts.body == Array("0123".utf8), "the next request was answered after the cut: \(parts.body.count) bytes")
        #expect(parts.head.contains("Connection: close"))
        #expect(pipelined.ending == .closed)
        let old = try Self.exchange(server, Self.request("GET", "/store/t/k", version: "1.0"))
        #expect(try #require(Self.split(old.bytes)).body == Array("0123".utf8))
        #expect(old.ending == .closed)
        let head = try Self.exchange(server, Self.request("HEAD", "/store/t/k"))
        #expect(try #require(Self.split(head.bytes)).body.isEmpty)
        #expect(head.ending == .closed)
        let zero = try Self.exchange(server, Self.request("GET", "/store/z/missing"))
        let zeroParts = try #require(Self.split(zero.bytes))
        #expect(zeroParts.head.first?.hasPrefix("HTTP/1.1 404") == true && zeroParts.body.isEmpty)
        #expect(zero.ending == .closed)
    }

    // MARK: - bytesPerSecond

    @Test func paceSendsTheAnswerSlowlyAndKeepsTheConnection() throws {
        let server = try Self.faultServer()
        let client = server.client()
        let value = Bytes.random(count: 4096, seed: 4)
        #expect(try client.put("s/k", value).status == 201)
        try FaultRules.set(client, #"[{"id":"slow","prefix":"s/","methods":["GET"],"bytesPerSecond":2048}]"#)
        let connection = try HTTPClientConnection(port: server.port, timeout: 15)
        defer { connection.close() }
        var response: ClientResponse?
        let elapsed = try Self.seconds {
            try connection.send(Self.request("GET", "/store/s/k"))
            response = try connection.readResponse()
        }
        #expect(response?.status == 200 && response?.body == value && response?.header("Larder-Fault") == "slow")
        #expect(elapsed >= 1.5, "4 KiB at 2 KiB/s came in \(elapsed) s")
        // The connection goes on as usual afterwards.
        try connection.send(Self.request("GET", "/healthz"))
        #expect(try connection.readResponse().status == 200)
    }

    @Test func paceReadsTheRequestBodySlowly() throws {
        let server = try Self.faultServer()
        let client = server.client()
        try FaultRules.set(client, #"[{"prefix":"s/","methods":["PUT"],"bytesPerSecond":2048}]"#)
        let value = Bytes.random(count: 4096, seed: 5)
        let connection = try HTTPClientConnection(port: server.port, timeout: 15)
        defer { connection.close() }
        var response: ClientResponse?
        let elapsed = try Self.seconds {
            try connection.send(Self.request("PUT", "/store/s/up", body: value))
            response = try connection.readResponse()
        }
        #expect(response?.status == 201, "\(response?.status ?? 0) \(response?.text ?? "")")
        #expect(elapsed >= 1.5, "a 4 KiB body read at 2 KiB/s was taken in \(elapsed) s")
        #expect(try client.get("s/up").body == value)
        // Chunked bodies are read at the rate too, and the connection goes on.
        let chunked = "PUT /store/s/chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n"
        let chunkedElapsed = try Self.seconds {
            try connection.send(Array(chunked.utf8) + value + Array("\r\n0\r\n\r\n".utf8))
            response = try connection.readResponse()
        }
        #expect(response?.status == 201)
        #expect(chunkedElapsed >= 1.5, "a chunked 4 KiB body read at 2 KiB/s was taken in \(chunkedElapsed) s")
        #expect(try client.get("s/chunked").body == value)
    }

    /// Paced transfers wait on the connection's timer: others are served
    /// meanwhile. The eight paced answers take over two minutes each (8 KiB
    /// at 64 B/s); had they held the server's threads, the plain requests
    /// would have waited for them past the client's 30 s socket timeout.
    @Test func aPacedTransferDoesNotSlowOthers() throws {
        let server = try Self.faultServer()
        let client = server.client()
        #expect(try client.put("s/k", Bytes.random(count: 8192, seed: 6)).status == 201)
        try FaultRules.set(client, #"[{"prefix":"s/","methods":["GET"],"bytesPerSecond":64}]"#)
        let slow = try (0..<8).map { _ in try HTTPClientConnection(port: server.port, timeout: 30) }
        for c in slow { try c.send(Self.request("GET", "/store/s/k")) }
        let quick = try Self.seconds { for _ in 0..<20 { FaultRules.expectUntouched(try client.get("fast"), 404) } }
        print("NetworkFaultTests: 20 plain requests in \(String(format: "%.3f", quick)) s beside 8 paced ones")
        for c in slow { c.close() }
    }

    // MARK: - Namespaces and metrics

    @Test func networkFaultsActOnlyInTheirNamespace() throws {
        let server = try Self.faultServer()
        let (w1, w2, main) = (Self.client(server, namespace: "w1"), Self.client(server, namespace: "w2"), server.client())
        for c in [w1, w2, main] { #expect(try c.put("k", "v").status == 201) }
        try FaultRules.set(w1, #"[{"id":"w1-drop","prefix":"","drop":"before"}]"#)
        let dropped = try Self.exchange(server, Self.request("GET", "/ns/w1/store/k"))
        #expect(dropped.ending == .reset)
        FaultRules.expectUntouched(try w2.get("k"), 200)
        FaultRules.expectUntouched(try main.get("k"), 200)
        // The default namespace's rules do not reach a namespace either.
        try FaultRules.set(main, #"[{"prefix":"/","truncate":0}]"#)
        FaultRules.expectUntouched(try w2.get("k"), 200)
    }

    /// `larder_faults_total{rule}` counts every fault, of either kind, per
    /// rule (and per namespace), read by prometheus_client; the counts
    /// outlive the rules.
    @Test func everyFaultIsCountedPerRule() throws {
        let server = try Self.faultServer()
        let (main, w1) = (server.client(), Self.client(server, namespace: "w1"))
        #expect(try w1.put("k", "v").status == 201)
        try FaultRules.set(main, #"""
            [{"id":"late","prefix":"l/","delayMs":1},{"id":"refused","prefix":"r/","status":503},
             {"id":"gone","prefix":"g/","drop":"before"},{"id":"cut","prefix":"c/","truncate":1},
             {"id":"slow","prefix":"s/","bytesPerSecond":100000}]
            """#)
        try FaultRules.set(w1, #"[{"id":"gone","prefix":"","methods":["GET"],"drop":"after"}]"#)
        for _ in 0..<3 { _ = try main.get("l/1") }
        for _ in 0..<2 { _ = try main.get("r/1") }
        for _ in 0..<4 { _ = try Self.exchange(server, Self.request("GET", "/store/g/1")) }
        _ = try Self.exchange(server, Self.request("GET", "/store/c/1"))
        _ = try main.get("s/1")
        for _ in 0..<2 { _ = try Self.exchange(server, Self.request("GET", "/ns/w1/store/k")) }
        #expect(try main.send("DELETE", "/faults").status == 200)
        #expect(try w1.send("DELETE", "/faults").status == 200)
        let scrape = try MetricsScrape.parse(try main.send("GET", "/metrics").body)
        #expect(scrape.types["larder_faults"] == "counter")
        let expected: [([String: String], Double)] = [
            (["rule": "late"], 3), (["rule": "refused"], 2), (["rule": "gone"], 4), (["rule": "cut"], 1),
            (["rule": "slow"], 1), (["namespace": "w1", "rule": "gone"], 2),
        ]
        for (labels, count) in expected {
            #expect(scrape.value("larder_faults_total", labels) == count, "\(labels)")
        }
    }

    /// The request journal records faulted requests as the connection
    /// acted them out: a drop before has no status, a drop after its real
    /// one with nothing sent, a truncated answer the bytes that went out.
    @Test func networkFaultsAreMarkedInTheJournal() throws {
        let server = try Self.faultServer()
        let client = server.client()
        let value = Bytes.random(count: 1000, seed: 9)
        #expect(try client.put("t/k", value).status == 201)
        #expect(try client.put("s/k", value).status == 201)
        try FaultRules.set(client, #"""
            [{"id":"gone","prefix":"b/","drop":"before"},{"id":"lost","prefix":"a/","methods":["PUT"],"drop":"after"},
             {"id":"cut","prefix":"t/","methods":["GET"],"truncate":10},
             {"id":"slow","prefix":"s/","methods":["GET"],"bytesPerSecond":100000}]
            """#)
        _ = try Self.exchange(server, Self.request("GET", "/store/b/1"))
        _ = try Self.exchange(server, Self.request("PUT", "/store/a/1", body: Array("v".utf8)))
        _ = try Self.exchange(server, Self.request("GET", "/store/t/k"))
        #expect(try client.get("s/k").body == value)
        let journal = try client.send("GET", "/journal?prefix=")
        #expect(journal.status == 200, "\(journal.status) \(journal.text)")
        let page = try JSONDecoder().decode(JournalPage.self, from: Data(journal.body))
        let faulted = page.requests.filter { $0.fault != nil }
            .map { "\($0.method) \($0.path) \($0.status.map(String.init) ?? "-") \($0.bytesOut) \($0.fault ?? "")" }
        #expect(faulted == ["GET /store/b/1 - 0 gone", "PUT /store/a/1 201 0 lost", "GET /store/t/k 200 10 cut",
                            "GET /store/s/k 200 1000 slow"], "\(faulted)")
    }

    // MARK: - The rules

    @Test func theNewFieldsAreListedAndValidated() throws {
        let server = try Self.faultServer()
        let client = server.client()
        let put = try client.send("PUT", "/faults", body: Array(#"[{"prefix":"a","drop":"after"},{"prefix":"b","truncate":0},{"prefix":"c","bytesPerSecond":512,"status":503}]"#.utf8))
        #expect(put.status == 200)
        #expect(put.text.contains(#""status":null,"drop":"after","truncate":null,"bytesPerSecond":null,"probability":1"#), "\(put.text)")
        #expect(put.text.contains(#""drop":null,"truncate":0,"bytesPerSecond":null"#), "\(put.text)")
        #expect(put.text.contains(#""status":503,"drop":null,"truncate":null,"bytesPerSecond":512"#), "\(put.text)")
        let invalid: [(String, String)] = [
            (#"[{"prefix":"a","drop":"during"}]"#, "drop must be \"before\""),
            (#"[{"prefix":"a","drop":true}]"#, "drop must be"),
            (#"[{"prefix":"a","drop":"before","status":503}]"#, "drop and status cannot be combined"),
            (#"[{"prefix":"a","drop":"after","truncate":5}]"#, "drop cannot be combined with truncate or bytesPerSecond"),
            (#"[{"prefix":"a","drop":"after","bytesPerSecond":5}]"#, "drop cannot be combined"),
            (#"[{"prefix":"a","truncate":-1}]"#, "truncate must be an integer from 0"),
            (#"[{"prefix":"a","truncate":"10"}]"#, "truncate must be"),
            (#"[{"prefix":"a","truncate":1.5}]"#, "truncate must be"),
            (#"[{"prefix":"a","bytesPerSecond":0}]"#, "bytesPerSecond must be an integer from 1"),
            (#"[{"prefix":"a","bytesPerSecond":2147483648}]"#, "bytesPerSecond must be"),
            (#"[{"prefix":"a","truncate":5,"bytesPerSecond":100}]"#, "truncate and bytesPerSecond cannot be combined"),
            (#"[{"prefix":"a","dropped":"after"}]"#, "bytesPerSecond"),
        ]
        for (body, fragment) in invalid {
            let response = try client.send("PUT", "/faults", body: Array(body.utf8))
            S.expectError(response, status: 400, code: "invalid_rule")
            let message = response.json?["message"] as? String ?? ""
            #expect(message.contains(fragment), "\(body): the message does not say \(fragment): \(message)")
        }
        #expect(try FaultRules.rules(client).count == 3, "a refused PUT changed the rules")
    }

    // MARK: - Real clients

    @Test func curlExitsWith56ForAResetAnd18ForAShortBody() throws {
        let server = try Self.faultServer()
        let client = server.client()
        // Incompressible: a client that takes gzip gets the same length.
        #expect(try client.put("t/k", Bytes.random(count: 1000, seed: 8)).status == 201)
        try FaultRules.set(client, #"[{"prefix":"b/","drop":"before"},{"prefix":"a/","methods":["PUT"],"drop":"after"},{"prefix":"t/","truncate":100}]"#)
        let base = "http://127.0.0.1:\(server.port)/store/"
        func curl(_ arguments: [String]) throws -> Int32 {
            try ProcessRunner.run("/usr/bin/env", ["curl", "-sS", "-o", "/dev/null", "--max-time", "20"] + arguments, timeout: 60).status
        }
        #expect(try curl([base + "b/1"]) == 56)
        #expect(try curl(["-X", "PUT", "--data-binary", "v", base + "a/1"]) == 56)
        #expect(try curl([base + "t/k"]) == 18)
        #expect(try client.get("a/1").text == "v")
    }

    @Test func pythonRequestsRaisesConnectionErrorAndChunkedEncodingError() throws {
        try PythonRunner.require([("requests", "requests")])
        let server = try Self.faultServer()
        let client = server.client()
        // Incompressible: a client that takes gzip gets the same length.
        #expect(try client.put("t/k", Bytes.random(count: 1000, seed: 8)).status == 201)
        try FaultRules.set(client, #"[{"prefix":"b/","drop":"before"},{"prefix":"a/","methods":["PUT"],"drop":"after"},{"prefix":"t/","truncate":100}]"#)
        let script = """
            import sys, requests
            base = sys.argv[1]
            def outcome(call):
                try:
                    call()
                    return "answered"
                except requests.exceptions.ChunkedEncodingError as e:
                    return "ChunkedEncodingError"
                except requests.exceptions.ConnectionError as e:
                    return "ConnectionError"
            print(outcome(lambda: requests.get(base + "b/1", timeout=20)))
            print(outcome(lambda: requests.put(base + "a/1", data=b"v", timeout=20)))
            print(outcome(lambda: requests.get(base + "t/k", timeout=20)))
            """
        let result = try PythonRunner.run(code: script, arguments: ["http://127.0.0.1:\(server.port)/store/"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n") == ["ConnectionError", "ConnectionError", "ChunkedEncodingError"], "\(result.stdout)")
    }
}
