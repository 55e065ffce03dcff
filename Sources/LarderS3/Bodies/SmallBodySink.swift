import LarderHTTP

/// Reads a small request body (a bucket's configuration, a DeleteObjects
/// document) into memory, up to `limit` bytes, checks it against the
/// signed payload hash and any checksum header, then hands it to `use`,
/// which answers.
final class SmallBodySink: HTTPRequestBodySink {
    private let call: S3Call
    private let limit: Int
    private let use: @Sendable ([UInt8]) -> Void
    private var checks: BodyChecks
    private var bytes: [UInt8] = []
    private var failed = false

    init(call: S3Call, checks: BodyChecks, limit: Int, use: @escaping @Sendable ([UInt8]) -> Void) {
        self.call = call
        self.limit = limit
        self.use = use
        self.checks = checks
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        guard !failed else { return }
        guard bytes.count + chunk.count <= limit else {
            failed = true
            call.fail(S3Error(.badRequest, "MaxMessageLengthExceeded", "Your request was too big (at most \(limit) bytes)."),
                      closeConnection: true)
            return
        }
        checks.update(chunk)
        bytes.append(contentsOf: chunk)
    }

    func finish() {
        guard !failed else { return }
        if case .failure(let error) = checks.finish(trailers: [:]) { call.fail(error); return }
        use(bytes)
    }

    func abort() { bytes = [] }
}
