/// An answer as `LarderTestClient` got it: status, fields and the whole body.
public struct TestResponse: Sendable {
    public let status: Int
    public let reason: String
    /// In the order the server gave them.
    public let headers: [(String, String)]
    public let body: [UInt8]
    /// The fault of the network the answer would have had on a socket
    /// (`reset`, `truncate`, `pace`, from `/faults` rules); nil: none.
    public let networkFault: String?

    /// The first field named `name`, in any case.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }
}
