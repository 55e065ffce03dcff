import LarderHTTP

/// Reads a small request body (a bucket's configuration, a DeleteObjects
/// document) into memory, up to `limit` bytes, checks it against the
/// signed payload hash and any checksum header, then hands it to `use`,
/// which answers. An aws-chunked body has its framing taken off (and its
/// chunk signatures checked) as a PutObject body has.
final class SmallBodySink: HTTPTruncatedBodySink {
    private let call: S3Call
    private let limit: Int
    private let use: @Sendable ([UInt8]) -> Void
    private var checks: BodyChecks
    private var chunked: AWSChunkedDecoder?
    private var bytes: [UInt8] = []
    private var failed = false

    init(call: S3Call, verified: SigV4Authenticator.Verified, checks: BodyChecks, limit: Int,
         use: @escaping @Sendable ([UInt8]) -> Void) {
        self.call = call
        self.limit = limit
        self.use = use
        self.checks = checks
        let encodings = (call.head.headers["Content-Encoding"] ?? "").lowercased()
        if verified.payload.isAWSChunked || encodings.contains("aws-chunked") {
            chunked = AWSChunkedDecoder(for: verified,
                                        expectedBytes: call.head.headers["x-amz-decoded-content-length"].flatMap { Int64($0) })
        }
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        guard !failed else { return }
        do {
            if chunked != nil {
                try chunked!.feed(chunk) { piece in try take(piece) }
            } else {
                try take(chunk)
            }
        } catch {
            failed = true
            call.fail(S3Call.s3Error(error, logger: call.logger, context: "\(call.head.method) \(call.head.path)"), closeConnection: true)
        }
    }

    private func take(_ piece: UnsafeRawBufferPointer) throws(S3Error) {
        guard bytes.count + piece.count <= limit else {
            throw S3Error(.badRequest, "MaxMessageLengthExceeded", "Your request was too big (at most \(limit) bytes).")
        }
        checks.update(piece)
        bytes.append(contentsOf: piece)
    }

    func finish() {
        guard !failed else { return }
        if let chunked, !chunked.isComplete {
            call.fail(.incompleteBody("the aws-chunked body ended before its last chunk"))
            return
        }
        if case .failure(let error) = checks.finish(trailers: chunked?.trailers ?? [:]) { call.fail(error); return }
        use(bytes)
    }

    func abort() { bytes = [] }

    /// The client half-closed before the whole body: S3's IncompleteBody.
    func bodyEndedEarly() {
        guard !failed else { return }
        failed = true
        bytes = []
        call.fail(.incompleteBody("You did not provide the number of bytes specified by the Content-Length HTTP header"),
                  closeConnection: true)
    }
}
