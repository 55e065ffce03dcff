import LarderHTTP
import LarderLog
import LarderStore

/// Streams a PUT body into a store upload and answers 201 or 204.
final class PutBodySink: HTTPRequestBodySink {
    private let upload: ValueUpload
    private let logger: Logger

    init(upload: ValueUpload, logger: Logger) {
        self.upload = upload
        self.logger = logger
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        do {
            try upload.write(chunk)
        } catch let error as StoreError {
            if error.isServerFault { logger.error("PUT \(upload.key): \(error)") }
            throw error.httpError
        }
    }

    func finish() -> HTTPResponse {
        do {
            let outcome = try upload.finish()
            return HTTPResponse(status: outcome.created ? .created : .noContent,
                                headers: [("ETag", outcome.metadata.etag)])
        } catch let error as StoreError {
            if error.isServerFault { logger.error("PUT \(upload.key): \(error)") }
            return error.httpError.response
        } catch {
            return HTTPError(.internalServerError, "internal_error", "\(error)").response
        }
    }

    func abort() { upload.abort() }
}
