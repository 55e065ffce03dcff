import LarderHTTP
import LarderModel
import LarderStoreVocabulary
import LarderSupport

/// PostObject: a browser's upload of one object by an HTML form
/// (`POST /bucket`, `multipart/form-data`), authorized by the form itself,
/// not by the request's headers: a policy signed with an access key's
/// secret (`PostFormSignature`) says what the fields must hold
/// (`PostPolicy`). The fields before the `file` field are read into memory
/// (at most `maxFieldBytes`); at the file's head the form is checked and,
/// if it passes, the file's bytes stream into the object's write as a
/// PutObject's do (`ObjectUploadSink`); fields after the file are ignored,
/// as on S3. The object's type is the `Content-Type` field's, else the file
/// part's own (a browser names its Blob's), else `binary/octet-stream`. A refused form is answered once its body is in (read and
/// dropped), so a browser reads the answer rather than a reset.
///
/// Confined to the connection's queue (the HTTP layer calls a sink there).
final class PostObjectSink: HTTPTruncatedBodySink {
    /// What the form needs of the server, resolved once it is known who signed it.
    struct Context {
        let bucket: String
        let credentials: S3Credentials
        /// The operations of the namespace an access key works in (and
        /// that namespace's journal record, set as the request's observer).
        let operations: (_ accessKey: String) throws(S3Error) -> S3Operations
    }

    /// What the fields before the file may take, names and values together.
    static let maxFieldBytes = 64 * 1024

    private var call: S3Call
    private let context: Context
    private var reader: FormDataReader
    /// The fields read, by lower-cased name (the first of a repeated name).
    private var fields: [String: String] = [:]
    private var fieldBytes = 0
    private var part: FormDataReader.PartHead?
    private var value: [UInt8] = []
    private var upload: ObjectUploadSink?
    private var fileEnded = false
    private var fileBytes: Int64 = 0
    private var sizes: ClosedRange<Int64>?
    /// Why the form is refused: answered once the body is in.
    private var refusal: S3Error?

    init(call: S3Call, boundary: String, context: Context) {
        self.call = call
        self.context = context
        reader = FormDataReader(boundary: boundary)
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        guard refusal == nil, upload?.failed != true else { return }
        do {
            try reader.feed(chunk) { event in try take(event) }
        } catch {
            upload?.abort()
            upload = nil
            refusal = S3Call.s3Error(error, logger: call.logger, context: "POST /\(context.bucket)")
        }
    }

    private func take(_ event: FormDataReader.Event) throws {
        if fileEnded { return }
        switch event {
        case .head(let head):
            part = head
            value = []
            fieldBytes += head.name.utf8.count
            if head.name.lowercased() == "file" { try startFile(head) }
        case .bytes(let bytes):
            if let upload {
                fileBytes += Int64(bytes.count)
                if let sizes, fileBytes > sizes.upperBound {
                    throw S3Error(.badRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size.")
                }
                try upload.write(bytes)
            } else {
                fieldBytes += bytes.count
                guard fieldBytes <= Self.maxFieldBytes else {
                    throw S3Error(.badRequest, "MaxPostPreDataLengthExceeded",
                                  "Your POST request fields preceding the upload file were too large (over \(Self.maxFieldBytes) bytes).")
                }
                value.append(contentsOf: bytes)
            }
        case .partEnd:
            if upload != nil {
                fileEnded = true
            } else if let part {
                let name = part.name.lowercased()
                if fields[name] == nil { fields[name] = String(decoding: value, as: UTF8.self) }
            }
            part = nil
        }
    }

    /// The form's fields are in: who signed it, whether its policy allows
    /// this upload, and the object's write begun.
    private func startFile(_ head: FormDataReader.PartHead) throws {
        let accessKey = try PostFormSignature.verify(fields, credentials: context.credentials)
        let operations = try context.operations(accessKey)
        if let origin = call.head.headers["Origin"] {
            call.cors = CORSHeaders(operations.settings.settings(context.bucket), origin: origin, method: "POST")
        }
        guard let template = fields["key"] else {
            throw S3Error.invalidArgument("Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.")
        }
        // `${filename}` is the file's own name, as a browser sends it.
        let objectKey = template.replacing("${filename}", with: head.filename ?? "")
        guard !objectKey.isEmpty else { throw S3Error.invalidArgument("User key must have a length greater than 0.") }
        var checked = fields
        checked["key"] = objectKey
        // `verify` found the policy (a signed form has one).
        let policy = try PostPolicy(base64: fields["policy"] ?? "")
        // The policy's expiration is judged by the namespace's clock, as a presigned URL's is.
        try policy.check(fields: checked, bucket: context.bucket, nowSeconds: operations.store.clock.nowNanos() / 1_000_000_000)
        sizes = policy.contentLengthRange
        if let acl = fields["acl"] { try FixedSubresources.checkCannedACL(acl) }
        let bucket = context.bucket
        let key = try BucketLayout.key(bucket: bucket, objectKey: Array(objectKey.utf8))
        let lookup: (String) -> String? = { [fields] in fields[$0.lowercased()] }
        var kept = try ObjectAttributes.headers(of: lookup, all: fields.map { (name: $0.key, value: $0.value) })
        let encryption = try ServerSideEncryption.kept(lookup)
        let known = try operations.objects.bucketDefaults(bucket, asked: encryption)
        kept += encryption + known.encryption
        if let tagging = fields["tagging"] {
            let tags = try ObjectTagging(xml: Array(tagging.utf8))
            if !tags.tags.isEmpty { kept.append((ObjectTagging.header, tags.query)) }
        }
        let checks = try BodyChecks(payload: .unsigned, checksumHeader: try BodyChecks.checksumHeader(in: lookup),
                                    trailerChecksum: nil, contentMD5: nil)
        let answer = PostObjectAnswer(bucket: bucket, key: objectKey, host: call.head.headers["Host"] ?? "localhost",
                                      fields: fields)
        let buckets = operations.buckets
        upload = try operations.objects.upload(
            into: key, contentType: fields["content-type"] ?? head.contentType ?? "binary/octet-stream", kept: kept, checks: checks, length: nil,
            condition: nil, call, ready: { buckets.exists(bucket) }, missing: .noSuchBucket(bucket), readyKnown: known.exists,
            answer: { attributes in answer.response(attributes) })
    }

    func finish() {
        if upload?.failed == true { return }
        if refusal == nil, !reader.isComplete {
            refusal = S3Error(.badRequest, "MalformedPOSTRequest",
                              "The body of your POST request is not well-formed multipart/form-data: it ends before its closing boundary.")
        }
        if refusal == nil, upload == nil {
            refusal = S3Error.invalidArgument("POST requires exactly one file upload per request (a field named 'file').")
        }
        if refusal == nil, let sizes, fileBytes < sizes.lowerBound {
            refusal = S3Error(.badRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size.")
        }
        guard let upload, refusal == nil else {
            upload?.abort()
            call.fail(refusal!)
            return
        }
        upload.finish()
    }

    func abort() { upload?.abort() }

    func bodyEndedEarly() {
        if let upload {
            upload.bodyEndedEarly()
        } else if refusal == nil {
            call.fail(.incompleteBody("the POST form ended before its file was sent"), closeConnection: true)
        } else {
            call.fail(refusal!, closeConnection: true)
        }
        refusal = nil
        upload = nil
    }
}
