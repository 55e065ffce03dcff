import Foundation
import LarderWire

/// One HTTP answer, read whole: the status, the headers and the body.
struct HTTPAnswer: Sendable {
    let head: ResponseHead
    let body: Data

    init(status: Int, headers: [(name: String, value: String)], body: Data) {
        self.init(head: ResponseHead(status: status, headers: headers), body: body)
    }

    init(head: ResponseHead, body: Data) {
        self.head = head
        self.body = body
    }

    var status: Int { head.status }

    /// The first value of header `name`, any case (ASCII, as header names are).
    subscript(header name: String) -> String? { head.value(name) }
}
