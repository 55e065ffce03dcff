import LarderHTTP
import LarderStorage
import LarderValueFile

/// Streams a PutObject body into a store write: the aws-chunked framing
/// taken off when there is one, the object's bytes checked against the
/// signed hash and any checksum as they pass, and the write published only
/// if they match and the bucket exists (else dropped: nothing is stored).
final class ObjectUploadSink: HTTPTruncatedBodySink {
    private let call: S3Call
    private let writer: ValueWriter
    private var checks: BodyChecks
    private var chunked: AWSChunkedDecoder?
    /// The bucket's existence, asked for as the body starts (answered by
    /// the time the body is in, on the disk store at once).
    private let bucketExists: StoreReply<Bool>
    private let bucket: String
    private var failed = false

    init(call: S3Call, writer: ValueWriter, checks: BodyChecks, chunked: AWSChunkedDecoder?, bucket: String, bucketExists: StoreReply<Bool>) {
        self.call = call
        self.writer = writer
        self.checks = checks
        self.chunked = chunked
        self.bucket = bucket
        self.bucketExists = bucketExists
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
            // Answered now, the connection closed after it: the rest of the
            // body is not worth reading.
            failed = true
            writer.abort()
            call.fail(S3Call.s3Error(error, logger: call.logger, context: "PUT \(writer.key)"), closeConnection: true)
        }
    }

    private func take(_ piece: UnsafeRawBufferPointer) throws {
        checks.update(piece)
        try writer.write(piece)
    }

    func finish() {
        guard !failed else { return }
        if let chunked, !chunked.isComplete {
            writer.abort()
            call.fail(.incompleteBody("the aws-chunked body ended before its last chunk"))
            return
        }
        if let error = checks.failure(trailers: chunked?.trailers ?? [:]) {
            writer.abort()
            call.fail(error)
            return
        }
        let (call, writer, bucket) = (self.call, WriterBox(writer), self.bucket)
        let published: StoreReply<PutOutcome> = bucketExists.then { exists in
            switch exists {
            case .success(true): return writer.writer.finish()
            case .success(false): writer.writer.abort(); return .now(.failure(S3Error.noSuchBucket(bucket)))
            case .failure(let error): writer.writer.abort(); return .now(.failure(error))
            }
        }
        call.answer(published) { outcome in
            let meta = try outcome.get().metadata
            return HTTPResponse(status: .ok, headers: [("ETag", meta.etag)])
        }
    }

    func abort() { writer.abort() }

    /// The client half-closed before the whole body: nothing is stored.
    func bodyEndedEarly() {
        guard !failed else { return }
        failed = true
        writer.abort()
        call.fail(.incompleteBody(chunked == nil ? "You did not provide the number of bytes specified by the Content-Length HTTP header"
                                                 : "the aws-chunked body ended before its last chunk"), closeConnection: true)
    }
}

/// Hands the writer to the bucket check's continuation. Unchecked: the
/// connection is done with the sink once `finish` runs, and the
/// continuation runs once, after it.
private struct WriterBox: @unchecked Sendable {
    let writer: ValueWriter
    init(_ writer: ValueWriter) { self.writer = writer }
}
