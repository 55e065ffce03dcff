import LarderHTTP
@testable import LarderRouting
import LarderTestSupport
import Synchronization
import Testing

/// The routing core both faces stand on, through `HTTPInProcessExchange`:
/// requests go through a real `RouteTable`, its middleware and intake,
/// as a connection hands them over, with no socket.
@Suite(.asyncLane) struct RouteTableTests {
    /// Answers with its name and the rest of the path it was given.
    struct Named: Route {
        let name: String
        var limit: Int64? = nil
        func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
            .respond(HTTPResponse(status: .ok, headers: [("Route", name)], body: .bytes(Array(request.rest.utf8))))
        }
        func maxBodyBytes(rest: Substring) -> Int64? { limit }
    }

    /// Reads the body, answers with its length after it.
    struct Upload: Route {
        let limit: Int64?
        final class Sink: HTTPRequestBodySink {
            let responder: HTTPResponder
            var count = 0
            init(_ responder: HTTPResponder) { self.responder = responder }
            func write(_ chunk: UnsafeRawBufferPointer) throws { count += chunk.count }
            func finish() { responder.respond(HTTPResponse(status: .created, body: .bytes(Array("\(count)".utf8)))) }
            func abort() {}
        }
        func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer { .receiveBody(Sink(request.responder)) }
        func maxBodyBytes(rest: Substring) -> Int64? { limit }
    }

    /// Adds `Seen: <name>` to every answer that passes back through it.
    struct Tag: LarderMiddleware {
        let name: String
        func handle(_ request: RouteRequest, next: (RouteRequest) -> HTTPBodyAction) -> HTTPBodyAction {
            var request = request
            let name = name
            request.responder = request.responder.intercept { response, next in
                var response = response
                response.headers.append(("Seen", name))
                next.respond(response)
            }
            return next(request)
        }
    }

    /// Answers 401 itself: the route is never called.
    struct Refuse: LarderMiddleware {
        func handle(_ request: RouteRequest, next: (RouteRequest) -> HTTPBodyAction) -> HTTPBodyAction {
            request.responder.respond(HTTPError(.unauthorized, .unauthorized, "no").response)
            return .ignore
        }
    }

    static func send(_ method: String, _ target: String, body: [UInt8] = [], to table: RouteTable,
                     configuration: HTTPServerConfiguration = HTTPServerConfiguration()) async -> HTTPInProcessExchange.Answer {
        let length = body.isEmpty && method == "GET" ? "" : "Content-Length: \(body.count)\r\n"
        return await HTTPInProcessExchange.serve(head: Array("\(method) \(target) HTTP/1.1\r\nHost: t\r\n\(length)\r\n".utf8),
                                                 body: body, to: table, configuration: configuration)
    }

    /// A head as the server's parser makes it.
    static func head(_ method: String, _ target: String) -> HTTPRequestHead {
        var parser = HTTPRequestParser(configuration: HTTPServerConfiguration())
        let bytes = Array("\(method) \(target) HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\n".utf8)
        guard case .complete(let head, _) = bytes.withUnsafeBytes({ parser.parse($0) }) else { fatalError("not a head") }
        return head
    }

    static func header(_ answer: HTTPInProcessExchange.Answer, _ name: String) -> [String] {
        answer.headers.filter { $0.0 == name }.map(\.1)
    }

    @Test func theFirstMatchingEntryAnswersWithTheRestOfThePath() async {
        let table = RouteTable([
            (.exact("/store"), Named(name: "exact")),
            (.prefix("/store/"), Named(name: "prefix")),
            (.prefix("/"), Named(name: "any")),
        ], middleware: [])
        let exact = await Self.send("GET", "/store", to: table)
        #expect(Self.header(exact, "Route") == ["exact"])
        let prefixed = await Self.send("GET", "/store/a/b?x=1", to: table)
        #expect(Self.header(prefixed, "Route") == ["prefix"])
        #expect(String(decoding: prefixed.body, as: UTF8.self) == "a/b")
        #expect(Self.header(await Self.send("GET", "/other", to: table), "Route") == ["any"])
    }

    @Test func noMatchIsAJSONNotFoundNamingThePath() async {
        let table = RouteTable([(.exact("/only"), Named(name: "only"))], middleware: [])
        let answer = await Self.send("GET", "/elsewhere", to: table)
        #expect(answer.status.code == 404)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("/elsewhere"))
    }

    @Test func middlewareRunsOutermostFirstAndSeesTheFinalAnswer() async {
        let table = RouteTable([(.prefix("/"), Named(name: "r"))], middleware: [Tag(name: "outer"), Tag(name: "inner")])
        let answer = await Self.send("GET", "/x", to: table)
        // The inner link sees the answer first on its way back out.
        #expect(Self.header(answer, "Seen") == ["inner", "outer"])
        // A body's answer passes back through the chain as well.
        let bodyTable = RouteTable([(.prefix("/"), Upload(limit: nil))], middleware: [Tag(name: "outer")])
        let uploaded = await Self.send("PUT", "/u", body: [1, 2, 3], to: bodyTable)
        #expect(uploaded.status.code == 201)
        #expect(String(decoding: uploaded.body, as: UTF8.self) == "3")
        #expect(Self.header(uploaded, "Seen") == ["outer"])
    }

    @Test func aLinkThatAnswersEarlyKeepsTheRouteAndTheBodyOut() async {
        let table = RouteTable([(.prefix("/"), Upload(limit: nil))], middleware: [Refuse()])
        let answer = await Self.send("PUT", "/u", body: [1, 2, 3], to: table)
        #expect(answer.status.code == 401)
    }

    @Test func aRouteHasItsOwnBodyLimit() async {
        var configuration = HTTPServerConfiguration()
        configuration.maxBodyBytes = 4
        let table = RouteTable([(.prefix("/big/"), Upload(limit: 100)), (.prefix("/"), Upload(limit: nil))], middleware: [])
        #expect(await Self.send("PUT", "/big/a", body: Array(repeating: 1, count: 50), to: table, configuration: configuration).status.code == 201)
        #expect(await Self.send("PUT", "/a", body: Array(repeating: 1, count: 50), to: table, configuration: configuration).status.code == 413)
        #expect(table.maxBodyBytes(for: Self.head("PUT", "/big/a")) == 100)
    }

    /// Serves a mounted request: answers with the path after the mount's prefix.
    final class Mounted: PrefixedHandler {
        func serve(_ head: HTTPRequestHead, path: Substring, prefixBytes: Int, _ responder: HTTPResponder) -> HTTPBodyAction {
            let answer = HTTPResponse(status: .ok, headers: [("Mounted", "yes")], body: .bytes(Array(path.utf8.dropFirst(prefixBytes))))
            // Returned only to the connection's own responder: one a
            // middleware wrapped must be answered through, to be seen.
            if responder.isConnections { return .answer(answer) }
            responder.respond(answer)
            return .ignore
        }
    }

    /// Mounts `/m/<x>` on `Mounted`, past `/m/<x>`; counts what it admits.
    final class Intake: RequestIntake {
        let handler = Mounted()
        let admitted = Atomic<Int>(0)
        func admit(_ head: HTTPRequestHead, path: Substring, _ responder: HTTPResponder) -> Mount? {
            admitted.add(1, ordering: .relaxed)
            guard path.hasPrefix("/m/"), let slash = path.dropFirst(3).firstIndex(of: "/") else { return nil }
            return Mount(handler, prefixBytes: path.utf8.distance(from: path.startIndex, to: slash))
        }
        func answerObserver(forRefused head: HTTPRequestHead) -> (any HTTPAnswerObserver)? { nil }
    }

    @Test func theIntakeMountsARequestAfterTheChainRanOnce() async {
        let intake = Intake()
        let table = RouteTable([(.prefix("/"), Named(name: "table"))], middleware: [Tag(name: "server")], intake: intake)
        let mounted = await Self.send("GET", "/m/w1/store/k", to: table)
        #expect(Self.header(mounted, "Mounted") == ["yes"])
        #expect(String(decoding: mounted.body, as: UTF8.self) == "/store/k")
        // The server's chain ran for it, once.
        #expect(Self.header(mounted, "Seen") == ["server"])
        let routed = await Self.send("GET", "/store/k", to: table)
        #expect(Self.header(routed, "Route") == ["table"])
        #expect(intake.admitted.load(ordering: .relaxed) == 2)
    }

    @Test func matchesCompareBytes() {
        #expect(RouteTable.Match.exact("/a").rest(of: "/a") == "")
        #expect(RouteTable.Match.exact("/a").rest(of: "/ab") == nil)
        #expect(RouteTable.Match.prefix("/a/").rest(of: "/a/b/c") == "b/c")
        #expect(RouteTable.Match.prefix("/a/").rest(of: "/a") == nil)
        #expect(RouteTable.Match.prefix("").rest(of: "/x") == "/x")
    }
}
