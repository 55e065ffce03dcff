import LarderHTTP

/// An S3 error: the status, S3's code (what SDKs raise, e.g. boto3's
/// `ClientError` code) and a message, answered as S3's `<Error>` XML.
struct S3Error: Error {
    let status: HTTPStatus
    let code: String
    let message: String
    /// Extra elements S3 adds for some codes (`BucketName`, `Key`).
    var details: [(String, String)] = []

    init(_ status: HTTPStatus, _ code: String, _ message: String, details: [(String, String)] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
    }

    /// The answer, for the request at `resource` (its path).
    func response(resource: Substring, requestID: String) -> HTTPResponse {
        var xml = S3XML()
        xml.open("Error")
        xml.element("Code", code)
        xml.element("Message", message)
        for (name, value) in details { xml.element(name, value) }
        xml.element("Resource", String(resource))
        xml.element("RequestId", requestID)
        xml.close("Error")
        return xml.response(status)
    }

    // MARK: - The errors the face gives

    static func accessDenied(_ message: String) -> S3Error { S3Error(.forbidden, "AccessDenied", message) }
    static let invalidAccessKeyId = S3Error(.forbidden, "InvalidAccessKeyId",
                                            "The AWS Access Key Id you provided does not exist in our records.")
    static let signatureDoesNotMatch = S3Error(
        .forbidden, "SignatureDoesNotMatch",
        "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
    static let requestTimeTooSkewed = S3Error(.forbidden, "RequestTimeTooSkewed",
                                              "The difference between the request time and the current time is too large.")
    static func authorizationHeaderMalformed(_ message: String) -> S3Error {
        S3Error(.badRequest, "AuthorizationHeaderMalformed", message)
    }
    static func invalidArgument(_ message: String) -> S3Error { S3Error(.badRequest, "InvalidArgument", message) }
    static func invalidRequest(_ message: String) -> S3Error { S3Error(.badRequest, "InvalidRequest", message) }
    static func noSuchBucket(_ bucket: String) -> S3Error {
        S3Error(.notFound, "NoSuchBucket", "The specified bucket does not exist", details: [("BucketName", bucket)])
    }
    static func noSuchKey(_ key: String) -> S3Error {
        S3Error(.notFound, "NoSuchKey", "The specified key does not exist.", details: [("Key", key)])
    }
    static func bucketNotEmpty(_ bucket: String) -> S3Error {
        S3Error(.conflict, "BucketNotEmpty", "The bucket you tried to delete is not empty", details: [("BucketName", bucket)])
    }
    static func bucketAlreadyOwnedByYou(_ bucket: String) -> S3Error {
        S3Error(.conflict, "BucketAlreadyOwnedByYou",
                "Your previous request to create the named bucket succeeded and you already own it.", details: [("BucketName", bucket)])
    }
    static func invalidBucketName(_ bucket: String) -> S3Error {
        S3Error(.badRequest, "InvalidBucketName", "The specified bucket is not valid.", details: [("BucketName", bucket)])
    }
    static let xAmzContentSHA256Mismatch = S3Error(
        .badRequest, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
    static func notImplemented(_ message: String) -> S3Error { S3Error(.notImplemented, "NotImplemented", message) }
    static let methodNotAllowed = S3Error(HTTPStatus(405, "Method Not Allowed"), "MethodNotAllowed",
                                          "The specified method is not allowed against this resource.")
    static func internalError(_ message: String) -> S3Error {
        S3Error(.internalServerError, "InternalError", "We encountered an internal error. Please try again. (\(message))")
    }
    static func invalidRange(length: Int64) -> S3Error {
        S3Error(.rangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable",
                details: [("ActualObjectSize", String(length))])
    }
    static func entityTooLarge(limit: Int64) -> S3Error {
        S3Error(.payloadTooLarge, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed object size.",
                details: [("MaxSizeAllowed", String(limit))])
    }
    static let preconditionFailed = S3Error(.preconditionFailed, "PreconditionFailed",
                                            "At least one of the pre-conditions you specified did not hold")
    static func incompleteBody(_ message: String) -> S3Error { S3Error(.badRequest, "IncompleteBody", message) }
    static func keyTooLong(_ message: String) -> S3Error { S3Error(.badRequest, "KeyTooLongError", message) }
    static func noSuchUpload(_ id: String) -> S3Error {
        S3Error(.notFound, "NoSuchUpload",
                "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
    }
    static func invalidPart(_ message: String) -> S3Error { S3Error(.badRequest, "InvalidPart", message) }
}
