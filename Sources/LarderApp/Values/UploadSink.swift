import LarderHTTP
import LarderStorage
import LarderValueFile
import LarderSupport

/// Streams a request body into a store write, then answers with what
/// `answer` makes of the outcome (PUT: 201/204; POST create: 201 + Location).
final class UploadSink: HTTPRequestBodySink {
    private let upload: ValueWriter
    private let responder: HTTPResponder
    private let logger: Logger
    private let answer: (PutOutcome) -> HTTPResponse

    init(upload: ValueWriter, responder: HTTPResponder, logger: Logger, answer: @escaping (PutOutcome) -> HTTPResponse) {
        self.upload = upload
        self.responder = responder
        self.logger = logger
        self.answer = answer
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        do {
            try upload.write(chunk)
        } catch {
            throw ErrorMapping.httpError(error, logger: logger, context: "PUT \(upload.key)")
        }
    }

    /// Answers once the value is durable: with fsync on, the connection's
    /// thread is not held while the flushes that make it so run.
    func finish() {
        let sink = Unchecked(self)
        upload.finish { result in sink.value.answer(result) }
    }

    private func answer(_ result: Result<PutOutcome, Error>) {
        switch result {
        case .success(let outcome): responder.respond(answer(outcome))
        case .failure(let error):
            responder.respond(ErrorMapping.httpError(error, logger: logger, context: "PUT \(upload.key)").response)
        }
    }

    func abort() { upload.abort() }

    /// The sink, for the completion of its write. Unchecked: the connection
    /// is done with the sink once `finish` returns (the body is complete),
    /// and the completion runs once, reading only immutable fields.
    private struct Unchecked: @unchecked Sendable {
        let value: UploadSink
        init(_ value: UploadSink) { self.value = value }
    }
}

/// Collects a small body (a JSON document for append or patch) in memory,
/// up to `limit` bytes, then answers with what `answer` makes of it.
final class BufferedBodySink: HTTPRequestBodySink {
    private var bytes: [UInt8] = []
    private let limit: Int
    /// Names the body in the 413 message.
    private let what: String
    private let responder: HTTPResponder
    private let answer: @Sendable ([UInt8]) throws(HTTPError) -> HTTPResponse
    /// Where `answer` runs: inline, or off the connection's thread for a
    /// store that answers later (nil: inline).
    private let work: StoreWork?

    init(limit: Int, what: String = "a JSON update body", responder: HTTPResponder, work: StoreWork? = nil,
         answer: @escaping @Sendable ([UInt8]) throws(HTTPError) -> HTTPResponse) {
        self.limit = limit
        self.what = what
        self.responder = responder
        self.work = work
        self.answer = answer
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        guard bytes.count + chunk.count <= limit else {
            throw HTTPError(.payloadTooLarge, .payloadTooLarge, "\(what) may be at most \(limit) bytes", closeConnection: true)
        }
        bytes.append(contentsOf: chunk)
    }

    func finish() {
        let bytes = self.bytes, responder = self.responder, answer = self.answer
        let reply: @Sendable () -> Void = {
            do throws(HTTPError) {
                responder.respond(try answer(bytes))
            } catch {
                responder.respond(error.response)
            }
        }
        if let work { work.run(reply) } else { reply() }
    }

    func abort() { bytes = [] }
}
