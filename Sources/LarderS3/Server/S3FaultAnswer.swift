import LarderHTTP

/// Acts out a fault rule on an S3 request, as `FaultMiddleware` does on the
/// plain API's, with S3's words: a status is answered as S3's XML error
/// whose code an SDK acts on (503 `SlowDown`, which boto3 and the AWS SDKs
/// retry with backoff; 404 `NoSuchKey`/`NoSuchBucket`, which they raise as
/// such), with `Larder-Fault: <rule>`; a delay holds the answer; the faults
/// of the network are the HTTP layer's (`HTTPNetworkFault`), the same on
/// both faces.
enum S3FaultAnswer {
    static let header = "Larder-Fault"

    /// Answers the request when the fault stands in for the operation
    /// (a status, `drop: before`): the body action to return. Else nil,
    /// and `call` answers through a responder that adds the fault to the
    /// operation's answer.
    static func apply(_ fault: S3Fault, to call: inout S3Call, path: S3Path) -> HTTPBodyAction? {
        let tag = (header, fault.rule)
        if fault.network == .reset(handled: false) || fault.status != nil {
            let answer = fault.status.map { Self.error($0, path: path, rule: fault.rule) }
                ?? S3Error(.serviceUnavailable, "SlowDown", "connection dropped by rule \(fault.rule)")
            var response = answer.response(resource: call.head.path, requestID: call.requestID)
            response.headers.append(tag)
            response.headers.append(("x-amz-request-id", call.requestID))
            response.networkFault = fault.network
            HeldAnswer.give(response, through: call.responder, after: fault.delayNanos)
            return .ignore
        }
        if case .pace(let rate)? = fault.network { call.responder.paceRequestBody(bytesPerSecond: rate) }
        let delay = fault.delayNanos, network = fault.network
        let responder = call.responder.intercept { response, next in
            var response = response
            response.headers.append(tag)
            if let network { response.networkFault = network }
            HeldAnswer.give(response, through: next, after: delay)
        }
        call = S3Call(head: call.head, responder: responder, requestID: call.requestID, logger: call.logger)
        return nil
    }

    /// The S3 error a rule's status stands for: the code S3 answers with
    /// that status (what SDKs raise, or retry on), else `InvalidRequest`
    /// for a 4xx and `InternalError` for a 5xx.
    static func error(_ status: HTTPStatus, path: S3Path, rule: String) -> S3Error {
        let message = "fault injected by rule \(rule)"
        switch status.code {
        case 403: return S3Error(status, "AccessDenied", message)
        case 404:
            switch path {
            case .object(let bucket, let key):
                return S3Error(status, "NoSuchKey", message, details: [("BucketName", bucket), ("Key", String(decoding: key, as: UTF8.self))])
            case .bucket(let bucket): return S3Error(status, "NoSuchBucket", message, details: [("BucketName", bucket)])
            case .service, .invalid: return S3Error(status, "NotFound", message)
            }
        case 405: return S3Error(status, "MethodNotAllowed", message)
        case 408: return S3Error(status, "RequestTimeout", message)
        case 409: return S3Error(status, "OperationAborted", message)
        case 412: return S3Error(status, "PreconditionFailed", message)
        case 413: return S3Error(status, "EntityTooLarge", message)
        case 416: return S3Error(status, "InvalidRange", message)
        case 429, 503: return S3Error(status, "SlowDown", "Please reduce your request rate. (\(message))")
        case 501: return S3Error(status, "NotImplemented", message)
        case 500..<600: return S3Error(status, "InternalError", "We encountered an internal error. Please try again. (\(message))")
        default: return S3Error(status, "InvalidRequest", message)
        }
    }
}
