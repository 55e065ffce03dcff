import Foundation
import LarderTestSupport
import LarderWire
import Testing

/// `ResponseParser`: one response out of bytes however they are cut, with
/// each framing of RFC 9112 §6.3.
@Suite(.blockingLane) struct ResponseParserTests {
    final class Collector: ResponseSink {
        var heads: [ResponseHead] = []
        var body: [UInt8] = []
        func responseHead(_ head: ResponseHead) { heads.append(head) }
        func responseBody(_ bytes: UnsafeRawBufferPointer) { body.append(contentsOf: bytes) }
    }

    /// Feeds `text` cut at `cut` (the way a receive buffer keeps unused
    /// bytes for the next call) and returns the sink, the parser and the
    /// bytes left after the response.
    static func parse(_ text: String, cut: Int, expectsBody: Bool = true) throws -> (Collector, ResponseParser, Int) {
        let bytes = Array(text.utf8)
        let sink = Collector()
        var parser = ResponseParser(expectsBody: expectsBody)
        var pending: [UInt8] = []
        var fed = 0
        for piece in [bytes[..<cut], bytes[cut...]] {
            pending += piece
            let used = try pending.withUnsafeBytes { try parser.consume($0, into: sink) }
            pending.removeFirst(used)
            fed += used
            if parser.isComplete { break }
        }
        return (sink, parser, bytes.count - fed)
    }

    @Test func everyCutOfAChunkedAnswerGivesTheSameBody() throws {
        let text = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nETag: \"x\"\r\n\r\n"
            + "5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: t\r\n\r\n"
        for cut in 0...text.utf8.count {
            let (sink, parser, left) = try Self.parse(text, cut: cut)
            #expect(parser.isComplete, "cut \(cut)")
            #expect(left == 0)
            #expect(sink.heads.count == 1 && sink.heads[0].status == 200 && sink.heads[0].value("etag") == "\"x\"")
            #expect(String(decoding: sink.body, as: UTF8.self) == "hello 0123456789", "cut \(cut)")
        }
    }

    @Test func contentLengthEndsTheAnswerAndLeavesTheRest() throws {
        let text = "HTTP/1.1 201 Created\r\ncontent-length:  3 \r\n\r\nabcHTTP/1.1"
        for cut in 0...text.utf8.count {
            let (sink, parser, left) = try Self.parse(text, cut: cut)
            #expect(parser.isComplete && String(decoding: sink.body, as: UTF8.self) == "abc")
            #expect(left == 8, "the next answer's bytes stay unread")
        }
    }

    @Test func headAnd304AndNoContentHaveNoBody() throws {
        let (_, head, _) = try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", cut: 5, expectsBody: false)
        #expect(head.isComplete)
        for status in ["204 No Content", "304 Not Modified"] {
            let (sink, parser, _) = try Self.parse("HTTP/1.1 \(status)\r\n\r\n", cut: 3)
            #expect(parser.isComplete && sink.body.isEmpty)
        }
    }

    @Test func aBodyWithoutLengthRunsToTheClose() throws {
        var (sink, parser, _) = try Self.parse("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it", cut: 20)
        #expect(!parser.isComplete && parser.readsUntilClose)
        let endedByClose = parser.closed()
        #expect(endedByClose)
        #expect(String(decoding: sink.body, as: UTF8.self) == "all of it")
        // A length-framed body cut by the close is not complete.
        (sink, parser, _) = try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", cut: 4)
        let cutShortEnds = parser.closed()
        #expect(!cutShortEnds)
    }

    @Test func whatIsNotAnHTTPAnswerIsRefused() {
        for text in ["SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
                     "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"] {
            #expect(throws: WireFailure.self, "\(text)") { _ = try Self.parse(text, cut: text.utf8.count) }
        }
    }
}
