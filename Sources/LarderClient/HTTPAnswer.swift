import Foundation

/// One HTTP answer, read whole: the status, the headers and the body.
struct HTTPAnswer: Sendable {
    let status: Int
    /// As received; looked up without regard to case.
    let headers: [(name: String, value: String)]
    let body: Data

    init(status: Int, headers: [(name: String, value: String)], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name`, any case.
    subscript(header name: String) -> String? {
        headers.first { $0.name.compare(name, options: .caseInsensitive) == .orderedSame }?.value
    }
}
