@testable import LarderClient
import LarderTestSupport
import Testing

/// `SSEParser`: events out of a `text/event-stream` body however it is cut
/// into chunks, with every line ending the standard allows.
@Suite(.blockingLane) struct SSEParserTests {
    static let stream = ": larder change feed\r\n\r\nid: 01\nevent: put\ndata: {\"key\":\"a\"}\n\n"
        + ": keep-alive\n\nevent: delete\rdata: one\rdata:two\r\rid: 03\r\nevent: expire\r\ndata: x\r\n\r\n"

    static let expected = [
        SSEMessage(id: "01", event: "put", data: "{\"key\":\"a\"}"),
        // No `id:` of its own: it keeps the last one, as EventSource does.
        SSEMessage(id: "01", event: "delete", data: "one\ntwo"),
        SSEMessage(id: "03", event: "expire", data: "x"),
    ]

    @Test func wholeStream() {
        var parser = SSEParser()
        #expect(parser.feed(Array(Self.stream.utf8)) == Self.expected)
        #expect(parser.lastEventID == "03")
    }

    @Test func everySplitGivesTheSameEvents() {
        let bytes = Array(Self.stream.utf8)
        for cut in 0...bytes.count {
            var parser = SSEParser()
            let events = parser.feed(bytes[..<cut]) + parser.feed(bytes[cut...])
            #expect(events == Self.expected, "cut at \(cut)")
        }
        var parser = SSEParser()
        #expect(bytes.flatMap { parser.feed([$0]) } == Self.expected)
    }

    @Test func commentsAndEmptyEventsDispatchNothing() {
        var parser = SSEParser()
        #expect(parser.feed(Array(": hi\n\nevent: put\n\nretry: 10\n\n".utf8)).isEmpty)
        #expect(parser.feed(Array("data\n\n".utf8)) == [SSEMessage(id: nil, event: "message", data: "")])
    }
}
