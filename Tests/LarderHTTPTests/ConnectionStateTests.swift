@testable import LarderHTTP
import LarderTestSupport
import Testing

/// A sink that keeps what it is told, for the state machine to hand back.
private final class RecordingSink: HTTPRequestBodySink {
    var bytes: [UInt8] = []
    var finished = false
    var aborted = false
    func write(_ chunk: UnsafeRawBufferPointer) throws { bytes += chunk }
    func finish() { finished = true }
    func abort() { aborted = true }
}

/// Bytes in, actions out: `HTTP1ConnectionState` driven directly, with no
/// socket, as `HTTP1Session` drives it.
private struct Machine {
    var state: HTTP1ConnectionState
    var input: [UInt8] = []
    var output = OutputBuffer(capacity: 4096)
    var now: UInt64 = 1_000_000_000

    init(_ configure: (inout HTTPServerConfiguration) -> Void = { _ in }) {
        var configuration = HTTPServerConfiguration()
        configure(&configuration)
        state = HTTP1ConnectionState(configuration: configuration)
    }

    /// Reads heads until one is complete (skipping empty lines); nil when more input is needed.
    mutating func nextHead(_ text: String = "") -> HTTP1ConnectionState.HeadStep {
        input += Array(text.utf8)
        while true {
            let step = input.withUnsafeBytes { state.readHead($0, inputIsFull: false, now: now) }
            switch step {
            case .skip(let n): input.removeFirst(n)
            case .request(_, let consumed): input.removeFirst(consumed); return step
            default: return step
            }
        }
    }

    mutating func head(_ text: String) -> HTTPRequestHead? {
        if case .request(let head, _) = nextHead(text) { return head }
        return nil
    }

    mutating func readBody(_ text: String = "") -> HTTP1ConnectionState.BodyStep {
        input += Array(text.utf8)
        let sink = state.bodySink
        let step = input.withUnsafeBytes { state.readBody($0) { try sink?.write($0) } }
        switch step {
        case .partial(let n), .complete(let n, _): input.removeFirst(n)
        default: break
        }
        return step
    }

    /// Writes the answer's head; returns it as text with what the state decided.
    mutating func answer(_ response: HTTPResponse) -> (head: String, start: HTTP1ConnectionState.ResponseStart) {
        let start = state.startResponse(response, into: &output)
        let text = String(decoding: output.unsent, as: UTF8.self)
        output.consumed(output.count)
        return (text, start)
    }

    var traffic: HTTP1ConnectionState.Traffic { .init(lastActivity: now, outputEmpty: true, sending: .nothing) }
}

@Suite(.blockingLane) struct ConnectionStateTests {
    @Test func aRequestWithoutBodyIsHandledAndKeptAlive() throws {
        var m = Machine()
        #expect(m.state.inputUse == .head)
        let headParsed = m.head("\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b")
        let head = try #require(headParsed)
        guard case .handle(let limit) = m.state.begin(head, now: m.now, routeLimit: { Issue.record("asked"); return nil }) else {
            Issue.record("not handled"); return
        }
        #expect(limit == HTTPServerConfiguration().maxBodyBytes)
        // Parked: the next head is not read before the answer.
        #expect(m.state.inputUse == .nothing)
        guard case .none = m.state.handled(head, bodyLimit: limit, sink: nil, answered: true) else { Issue.record("plan"); return }
        let (text, start) = m.answer(HTTPResponse(status: .ok, body: .bytes(Array("hi".utf8))))
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.contains("Content-Length: 2\r\n"))
        #expect(!text.contains("Connection: close"))
        #expect(!start.closes)
        #expect(start.request?.target == "/a")
        guard case .length(2) = start.framing else { Issue.record("\(start.framing)"); return }
        #expect(m.state.inputUse == .head)
        guard case .needMore(timerStarted: true) = m.nextHead() else { Issue.record("a partial head starts the head timer"); return }
    }

    @Test func aChunkedBodyGoesToTheSinkAfterContinue() throws {
        var m = Machine()
        let headParsed = m.head("PUT /k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n")
        let head = try #require(headParsed)
        var asked = false
        guard case .handle(let limit) = m.state.begin(head, now: m.now, routeLimit: { asked = true; return 10 }) else {
            Issue.record("not handled"); return
        }
        #expect(asked && limit == 10)
        let sink = RecordingSink()
        guard case .read(sendContinue: true) = m.state.handled(head, bodyLimit: limit, sink: sink, answered: false) else {
            Issue.record("not read"); return
        }
        #expect(m.state.inputUse == .body)
        guard case .partial = m.readBody("3\r\nabc\r\n") else { Issue.record("partial"); return }
        guard case .complete(_, let finish?) = m.readBody("2\r\nde\r\n0\r\n\r\nGET") else { Issue.record("complete"); return }
        #expect(finish === sink)
        #expect(sink.bytes == Array("abcde".utf8))
        #expect(String(decoding: m.input, as: UTF8.self) == "GET")
    }

    @Test func aBodyOverTheLimitIsRefusedBeforeTheHandler() throws {
        var m = Machine { $0.maxBodyBytes = 4 }
        let headParsed = m.head("PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n")
        let head = try #require(headParsed)
        guard case .reject(let error) = m.state.begin(head, now: m.now, routeLimit: { nil }) else { Issue.record("accepted"); return }
        #expect(error.status.code == 413)
        let (text, start) = m.answer(error.response)
        #expect(start.closes && text.contains("Connection: close\r\n"))
        #expect(m.state.closesAfterOutput && m.state.inputUse == .nothing)
    }

    @Test func anUnreadSmallBodyIsSkippedAndALargeOneCloses() throws {
        var small = Machine()
        let headParsed = small.head("POST /k HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n")
        let head = try #require(headParsed)
        _ = small.state.begin(head, now: small.now, routeLimit: { nil })
        _ = small.state.handled(head, bodyLimit: 100, sink: nil, answered: true)
        let smallCloses = small.answer(HTTPResponse(status: .ok)).start.closes
        #expect(!smallCloses)
        #expect(small.state.inputUse == .body)
        guard case .complete(3, nil) = small.readBody("abcGET") else { Issue.record("skipped"); return }
        #expect(small.state.inputUse == .head)

        var large = Machine()
        let bigParsed = large.head("POST /k HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n")
        let big = try #require(bigParsed)
        _ = large.state.begin(big, now: large.now, routeLimit: { nil })
        let sink = RecordingSink()
        guard case .abort(let aborted) = large.state.handled(big, bodyLimit: 1 << 30, sink: sink, answered: true) else {
            Issue.record("the answer wins over the sink"); return
        }
        #expect(aborted === sink)
        let largeCloses = large.answer(HTTPResponse(status: .ok)).start.closes
        #expect(largeCloses)
    }

    @Test func aBrokenChunkEndsTheRequestThroughItsSink() throws {
        var m = Machine()
        let headParsed = m.head("PUT /k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        let head = try #require(headParsed)
        _ = m.state.begin(head, now: m.now, routeLimit: { nil })
        let sink = RecordingSink()
        _ = m.state.handled(head, bodyLimit: 100, sink: sink, answered: false)
        guard case .failed(let error as HTTPError, let failed) = m.readBody("zz\r\n") else { Issue.record("not failed"); return }
        #expect(error.status.code == 400 && failed === sink)
        let closes = m.answer(HTTPResponse(status: .ok)).start.closes
        #expect(closes, "the rest of the body is not read")
    }

    @Test func badInputIsRejectedAndHTTP10Closes() throws {
        var bad = Machine()
        guard case .reject(let error) = bad.nextHead("GET /a#b HTTP/1.1\r\nHost: x\r\n\r\n") else { Issue.record("accepted"); return }
        #expect(error.status.code == 400)

        var old = Machine()
        let headParsed = old.head("GET /a HTTP/1.0\r\n\r\n")
        let head = try #require(headParsed)
        _ = old.state.begin(head, now: old.now, routeLimit: { nil })
        let (text, start) = old.answer(HTTPResponse(status: .ok, body: .unsizedStream(EmptyStream())))
        #expect(start.closes && text.contains("Connection: close"))
        guard case .untilClose = start.framing else { Issue.record("\(start.framing)"); return }
    }

    @Test func timeouts() throws {
        var m = Machine { $0.headerTimeout = 2; $0.idleTimeout = 5 }
        // Silent since it connected: the header timeout, not the idle one.
        #expect(m.state.deadline(m.traffic, answerDue: { nil }) == m.now + 2_000_000_000)
        // Idle between requests: the idle timeout.
        let firstParsed = m.head("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try #require(firstParsed)
        _ = m.state.begin(first, now: m.now, routeLimit: { nil })
        _ = m.answer(HTTPResponse(status: .noContent))
        #expect(m.state.deadline(m.traffic, answerDue: { nil }) == m.now + 5_000_000_000)
        guard case .needMore(timerStarted: true) = m.nextHead("GET / HT") else { Issue.record("no timer"); return }
        #expect(m.state.deadline(m.traffic, answerDue: { nil }) == m.now + 2_000_000_000)
        guard case .headTimedOut(let error) = m.state.timedOut(m.traffic) else { Issue.record("no 408"); return }
        #expect(error.status.code == 408)

        // A parked request waits for its answer's own deadline only.
        var parked = Machine()
        let headParsed = parked.head("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try #require(headParsed)
        _ = parked.state.begin(head, now: parked.now, routeLimit: { nil })
        #expect(parked.state.deadline(parked.traffic, answerDue: { nil }) == .max)
        #expect(parked.state.deadline(parked.traffic, answerDue: { 42 }) == 42)
        // An event stream that keeps up is never idle.
        let events = HTTP1ConnectionState.Traffic(lastActivity: 0, outputEmpty: true, sending: .events)
        #expect(parked.state.deadline(events, answerDue: { nil }) == .max)
    }

    @Test func shutdownClosesIdleAndParkedButNotBusyConnections() throws {
        var idle = Machine()
        let idleCloses = idle.state.shutdown(idle.traffic, hasUnread: false)
        #expect(idleCloses)

        var parked = Machine()
        let headParsed = parked.head("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try #require(headParsed)
        _ = parked.state.begin(head, now: parked.now, routeLimit: { nil })
        let parkedCloses = parked.state.shutdown(parked.traffic, hasUnread: false)
        #expect(parkedCloses)

        var busy = Machine()
        let putParsed = busy.head("PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n")
        let put = try #require(putParsed)
        _ = busy.state.begin(put, now: busy.now, routeLimit: { nil })
        _ = busy.state.handled(put, bodyLimit: 100, sink: RecordingSink(), answered: false)
        let busyCloses = busy.state.shutdown(busy.traffic, hasUnread: false)
        #expect(!busyCloses)
        // After shutdown began, the answer closes the connection.
        let answerCloses = busy.answer(HTTPResponse(status: .ok)).start.closes
        #expect(answerCloses)
    }
}

private final class EmptyStream: HTTPBodyStream {
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { 0 }
    func close() {}
}
