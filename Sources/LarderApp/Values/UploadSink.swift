import LarderHTTP
import LarderRouting
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

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
        responder.respond(after: upload.finish(), Answer(sink: self))
    }

    func abort() { upload.abort() }

    /// The answer to the write's outcome. Unchecked: the connection is done
    /// with the sink once `finish` returns (the body is complete), and the
    /// answer is made once, from immutable fields.
    private struct Answer: StoreAnswer, @unchecked Sendable {
        let sink: UploadSink
        func response(_ result: Result<PutOutcome, any Error>) throws(HTTPError) -> HTTPResponse {
            switch result {
            case .success(let outcome): return sink.answer(outcome)
            case .failure(let error): throw ErrorMapping.httpError(error, logger: sink.logger, context: "PUT \(sink.upload.key)")
            }
        }
    }
}

/// Collects a small body (a JSON document for append or patch) in memory,
/// up to `limit` bytes, then answers with what `answer` makes of the store's
/// answer to `update` (the write the body asks for).
final class BufferedBodySink<Value: Sendable>: HTTPRequestBodySink {
    private var bytes: [UInt8] = []
    private let limit: Int
    /// Names the body in the 413 message.
    private let what: String
    private let responder: HTTPResponder
    private let update: @Sendable ([UInt8]) -> StoreReply<Value>
    private let answer: ClosureAnswer<Value>

    init(limit: Int, what: String = "a JSON update body", responder: HTTPResponder,
         update: @escaping @Sendable ([UInt8]) -> StoreReply<Value>,
         answer: @escaping @Sendable (Result<Value, any Error>) throws(HTTPError) -> HTTPResponse) {
        self.limit = limit
        self.what = what
        self.responder = responder
        self.update = update
        self.answer = ClosureAnswer(body: answer)
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        guard bytes.count + chunk.count <= limit else {
            throw HTTPError(.payloadTooLarge, .payloadTooLarge, "\(what) may be at most \(limit) bytes", closeConnection: true)
        }
        bytes.append(contentsOf: chunk)
    }

    func finish() {
        responder.respond(after: update(bytes), answer)
    }

    func abort() { bytes = [] }
}

extension BufferedBodySink where Value == [UInt8] {
    /// A body answered from itself alone, now (no store call).
    convenience init(limit: Int, what: String, responder: HTTPResponder,
                     answer: @escaping @Sendable ([UInt8]) throws(HTTPError) -> HTTPResponse) {
        self.init(limit: limit, what: what, responder: responder, update: { .now(.success($0)) }) { body throws(HTTPError) in
            guard case .success(let bytes) = body else { preconditionFailure("a body given now") }
            return try answer(bytes)
        }
    }
}
