import Crypto
import FoundationEssentials
import LarderHTTP

/// S3's server-side-encryption headers, taken as S3 takes them and kept
/// with the object, which is stored as any other (Larder encrypts nothing:
/// code under test that asks for SSE-S3, SSE-KMS or SSE-C gets the answers
/// S3 gives). A write's headers are checked as S3 checks them (a known
/// algorithm, a KMS key only with `aws:kms`, SSE-C's key 256 bits and its
/// MD5 matching, never SSE-C with another kind) and echoed in the write's
/// answer and every GET and HEAD. An SSE-C object is read only with its
/// key's headers, as on S3; a read never names SSE-S3 or SSE-KMS.
enum ServerSideEncryption {
    static let algorithm = "x-amz-server-side-encryption"
    static let kmsKeyID = "x-amz-server-side-encryption-aws-kms-key-id"
    static let customerAlgorithm = "x-amz-server-side-encryption-customer-algorithm"
    static let customerKey = "x-amz-server-side-encryption-customer-key"
    static let customerKeyMD5 = "x-amz-server-side-encryption-customer-key-MD5"
    /// What CopyObject and UploadPartCopy name the source's SSE-C key with,
    /// in place of `x-amz-`.
    static let copySourcePrefix = "x-amz-copy-source-"

    static let algorithms: Set<String> = ["AES256", "aws:kms", "aws:kms:dsse"]

    /// The kept headers' names, as the answers spell them.
    static let keptNames: Set<String> = [algorithm, kmsKeyID, customerAlgorithm, customerKeyMD5]

    /// The headers to keep with an object a write (PutObject,
    /// CreateMultipartUpload, CopyObject) asks to encrypt.
    static func kept(_ headers: HTTPHeaders) throws(S3Error) -> [(name: String, value: String)] {
        // One pass over the names for the common write that asks for none.
        guard headers.containsName(startingWith: "x-amz-server-side-encryption") else { return [] }
        return try kept { headers[$0] }
    }

    /// `kept(_:)` of the fields `headers` finds by name (a browser upload's form fields).
    static func kept(_ headers: (String) -> String?) throws(S3Error) -> [(name: String, value: String)] {
        let customer = try customerKeyMD5(headers, prefix: "")
        if let sse = headers(algorithm) {
            guard algorithms.contains(sse) else {
                throw S3Error.invalidArgument("The encryption method specified is not supported: \(sse)")
            }
            guard customer == nil else {
                throw S3Error.invalidArgument("Server Side Encryption with Customer provided key is incompatible with the encryption method specified")
            }
            var kept = [(name: algorithm, value: sse)]
            if let key = headers(kmsKeyID) {
                guard sse.hasPrefix("aws:kms") else {
                    throw S3Error.invalidArgument("x-amz-server-side-encryption-aws-kms-key-id is only valid with aws:kms encryption")
                }
                kept.append((kmsKeyID, key))
            }
            return kept
        }
        if headers(kmsKeyID) != nil {
            throw S3Error.invalidArgument("x-amz-server-side-encryption-aws-kms-key-id needs x-amz-server-side-encryption: aws:kms")
        }
        guard let customer else { return [] }
        return [(customerAlgorithm, "AES256"), (customerKeyMD5, customer)]
    }

    /// The SSE-C key's MD5 (base64) a request names under `prefix`
    /// (`x-amz-copy-source-` for a copy's source), checked; nil: none named.
    static func customerKeyMD5(_ headers: HTTPHeaders, prefix: String) throws(S3Error) -> String? {
        try customerKeyMD5({ headers[$0] }, prefix: prefix)
    }

    static func customerKeyMD5(_ headers: (String) -> String?, prefix: String) throws(S3Error) -> String? {
        // `x-amz-server-side-…` becomes `x-amz-copy-source-server-side-…`.
        func named(_ name: String) -> String? { headers(prefix.isEmpty ? name : prefix + name.dropFirst(6)) }
        let algorithm = named(customerAlgorithm), key = named(customerKey), md5 = named(customerKeyMD5)
        guard algorithm != nil || key != nil || md5 != nil else { return nil }
        guard let algorithm else {
            throw S3Error.invalidArgument("Requests specifying Server Side Encryption with Customer provided keys must provide a valid encryption algorithm.")
        }
        guard algorithm == "AES256" else {
            throw S3Error.invalidArgument("The encryption algorithm \(algorithm) is not supported: AES256 only.")
        }
        guard let key, let bytes = Data(base64Encoded: key), bytes.count == 32 else {
            throw S3Error.invalidArgument("The secret key was invalid for the specified algorithm (a base64 256-bit key).")
        }
        let computed = Data(Insecure.MD5.hash(data: bytes)).base64EncodedString()
        guard let md5 else {
            throw S3Error.invalidArgument("Requests specifying Server Side Encryption with Customer provided keys must provide the client calculated MD5 of the secret key.")
        }
        guard md5 == computed else {
            throw S3Error.invalidArgument("The calculated MD5 hash of the key did not match the hash that was provided.")
        }
        return computed
    }

    /// A GET or HEAD of an object kept with `kept` headers (or a copy's
    /// source, with `prefix`): an SSE-C object needs its own key, any
    /// other object no SSE-C key; and a read names no other encryption.
    static func checkRead(_ headers: HTTPHeaders, kept: [(name: String, value: String)], prefix: String = "") throws(S3Error) {
        // The common read: no SSE-C object, and no encryption header (one pass over the names).
        if prefix.isEmpty, !kept.contains(where: { $0.name == customerKeyMD5 }),
           !headers.containsName(startingWith: "x-amz-server-side-encryption") {
            return
        }
        if prefix.isEmpty, headers[algorithm] != nil || headers[kmsKeyID] != nil {
            throw S3Error.invalidArgument("x-amz-server-side-encryption is not valid on a read.")
        }
        try sameCustomerKey(asked: customerKeyMD5(headers, prefix: prefix), kept: kept,
                            notApplicable: "The encryption parameters are not applicable to this object.",
                            missing: "The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.",
                            other: "The provided customer key does not match the one the object was stored with.")
    }

    /// UploadPart, UploadPartCopy: a part of an upload created with SSE-C
    /// is sent with the upload's key (its headers, checked), a part of any
    /// other upload with no SSE-C key.
    static func checkPart(_ headers: HTTPHeaders, upload kept: [(name: String, value: String)]) throws(S3Error) {
        try sameCustomerKey(asked: customerKeyMD5(headers, prefix: ""), kept: kept,
                            notApplicable: "The multipart upload was not created with SSE-C: it takes no customer key.",
                            missing: "The multipart upload was created with SSE-C: each part must be sent with the same customer key.",
                            other: "The provided customer key does not match the one the upload was created with.")
    }

    /// `asked` (an SSE-C key's MD5, or nil) is the key `kept` headers name,
    /// or none where they name none; else `InvalidRequest` with the message for the case.
    private static func sameCustomerKey(asked: String?, kept: [(name: String, value: String)], notApplicable: String,
                                        missing: String, other: String) throws(S3Error) {
        switch (kept.first { $0.name == customerKeyMD5 }?.value, asked) {
        case (nil, nil): return
        case (nil, .some): throw S3Error.invalidRequest(notApplicable)
        case (.some, nil): throw S3Error.invalidRequest(missing)
        case (.some(let stored), .some(let asked)):
            guard stored == asked else { throw S3Error.invalidRequest(other) }
        }
    }

    /// The kept encryption headers of an object, as its answers echo them.
    static func echoed(_ kept: [(name: String, value: String)]) -> [(String, String)] {
        kept.filter { keptNames.contains($0.name) }.map { ($0.name, $0.value) }
    }
}
