import LarderHTTP
import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// Streams a PutObject body into a store write: the aws-chunked framing
/// taken off when there is one, the object's bytes checked against the
/// signed hash and any checksum as they pass, and the write published only
/// if they match and its bucket (or upload) exists (else dropped: nothing
/// is stored).
final class ObjectUploadSink: HTTPTruncatedBodySink {
    private let call: S3Call
    private let writer: ValueWriter
    private var checks: BodyChecks
    /// What is kept with the object; its digests are filled in at the end.
    private var attributes: ObjectAttributes
    private var chunked: AWSChunkedDecoder?
    /// Whether the write may be published (its bucket, its upload exists),
    /// asked once the body is in (`receive` asked already as it started,
    /// to refuse before the body); `missing` is the answer when not.
    private let ready: @Sendable () -> StoreReply<Bool>
    private let missing: S3Error
    /// The answer to a stored upload, made of what is kept with it.
    private let answer: @Sendable (ObjectAttributes) -> HTTPResponse
    /// Whether the upload was refused and answered (nothing more is read or written).
    private(set) var failed = false

    init(call: S3Call, writer: ValueWriter, checks: BodyChecks, attributes: ObjectAttributes, chunked: AWSChunkedDecoder?,
         ready: @escaping @Sendable () -> StoreReply<Bool>, missing: S3Error,
         answer: @escaping @Sendable (ObjectAttributes) -> HTTPResponse = ObjectUploadSink.uploadAnswer) {
        self.call = call
        self.writer = writer
        self.checks = checks
        self.attributes = attributes
        self.chunked = chunked
        self.ready = ready
        self.missing = missing
        self.answer = answer
    }

    /// PutObject's and UploadPart's answer: 200 with the ETag, checksum and encryption.
    static func uploadAnswer(_ attributes: ObjectAttributes) -> HTTPResponse {
        HTTPResponse(status: .ok, headers: attributes.uploadAnswerHeaders)
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
        switch checks.finish(trailers: chunked?.trailers ?? [:]) {
        case .failure(let error):
            writer.abort()
            call.fail(error)
            return
        case .success(let digests):
            attributes.md5 = digests.md5
            attributes.checksum = digests.checksum
            do {
                try writer.setAttributes(attributes.encoded())
            } catch {
                writer.abort()
                call.fail(S3Call.s3Error(error, logger: call.logger, context: "PUT \(writer.key)"))
                return
            }
        }
        let (call, writer, missing) = (self.call, WriterBox(writer), self.missing)
        // Asked again now the body is in: an upload aborted meanwhile takes no part.
        let published: StoreReply<PutOutcome> = ready().then { ready in
            switch ready {
            case .success(true): return writer.writer.finish()
            case .success(false): writer.writer.abort(); return .now(.failure(missing))
            case .failure(let error): writer.writer.abort(); return .now(.failure(error))
            }
        }
        let (attributes, answer) = (self.attributes, self.answer)
        call.answer(published) { outcome in
            _ = try outcome.get()
            return answer(attributes)
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

/// Hands a writer to the continuation that finishes it (after a bucket
/// check, between the parts of a multipart upload). Unchecked: one step
/// uses the writer at a time, each after the last.
struct WriterBox: @unchecked Sendable {
    let writer: ValueWriter
    init(_ writer: ValueWriter) { self.writer = writer }
}
