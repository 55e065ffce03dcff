import LarderHTTP

/// A request body sink for test handlers: gathers the whole body, then
/// answers with what `answer` makes of the head and the bytes.
/// (Called on the connection's queue, one call at a time: no lock.)
package final class CollectingBodySink: HTTPRequestBodySink {
    private var bytes: [UInt8] = []
    private let head: HTTPRequestHead
    private let responder: HTTPResponder
    private let answer: (HTTPRequestHead, [UInt8]) -> HTTPResponse

    package init(_ head: HTTPRequestHead, _ responder: HTTPResponder,
                 answer: @escaping (HTTPRequestHead, [UInt8]) -> HTTPResponse) {
        self.head = head
        self.responder = responder
        self.answer = answer
    }

    package func write(_ chunk: UnsafeRawBufferPointer) throws { bytes.append(contentsOf: chunk) }
    package func finish() { responder.respond(answer(head, bytes)) }
    package func abort() {}
}
