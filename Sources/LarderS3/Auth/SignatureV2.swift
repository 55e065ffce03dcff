import Crypto
import FoundationEssentials
import LarderHTTP
import LarderValueFile

/// AWS Signature Version 2, what older clients and some SDK presigners
/// still make: `Authorization: AWS <key>:<signature>`, or a presigned URL's
/// `AWSAccessKeyId`, `Expires` and `Signature`. The signature is the
/// base64 HMAC-SHA1, with the secret, of
///
///     <method>\n<Content-MD5>\n<Content-Type>\n<Date or Expires>\n
///     <x-amz-* headers, lower-case, sorted, name:value\n each><resource>
///
/// where the resource is `/bucket/key` (path style, or the virtual host's
/// bucket in front of the path) and the subresources below in the query,
/// sorted. The Date line is empty when `x-amz-date` is sent (it is then
/// among the x-amz headers). The body is not signed (its Content-MD5 is).
enum SignatureV2 {
    /// The query parameters that are part of the resource signed.
    static let subresources: Set<String> = [
        "acl", "attributes", "cors", "delete", "encryption", "legal-hold", "lifecycle", "location", "logging",
        "notification", "object-lock", "partNumber", "policy", "requestPayment", "response-cache-control",
        "response-content-disposition", "response-content-encoding", "response-content-language", "response-content-type",
        "response-expires", "restore", "retention", "tagging", "torrent", "uploadId", "uploads", "versionId", "versioning",
        "versions", "website",
    ]

    /// What is signed: `dateLine` is the Date header's (empty with
    /// `x-amz-date`), or a presigned URL's `Expires`.
    /// `bucketSlash`: a path-style bucket's resource as `/bucket/` (what
    /// botocore signs) rather than `/bucket` as sent.
    static func stringToSign(_ head: HTTPRequestHead, dateLine: String, virtualHostBucket: String?,
                             bucketSlash: Bool = false) -> String {
        var amz: [String: [String]] = [:]
        for (name, value) in head.headers {
            let lower = name.lowercased()
            guard lower.hasPrefix("x-amz-") else { continue }
            amz[lower, default: []].append(value.trimmingWhitespace())
        }
        var text = head.method.description + "\n"
        text += (head.headers["Content-MD5"] ?? "") + "\n"
        text += (head.headers["Content-Type"] ?? "") + "\n"
        text += dateLine + "\n"
        for name in amz.keys.sorted() { text += name + ":" + amz[name]!.joined(separator: ",") + "\n" }
        text += resource(head, virtualHostBucket: virtualHostBucket, bucketSlash: bucketSlash)
        return text
    }

    static func resource(_ head: HTTPRequestHead, virtualHostBucket: String?, bucketSlash: Bool = false) -> String {
        var resource = (virtualHostBucket.map { "/" + $0 } ?? "") + Self.rawPath(head.target) + (bucketSlash ? "/" : "")
        var signed: [(name: String, value: String?)] = []
        if let text = head.query {
            S3Query.forEachPair(text) { name, value in
                let name = String(decoding: AWSURIEncoding.decode(name), as: UTF8.self)
                guard subresources.contains(name) else { return }
                signed.append((name, value.map { String(decoding: AWSURIEncoding.decode($0), as: UTF8.self) }))
            }
        }
        if !signed.isEmpty {
            let items = signed.sorted { $0.name < $1.name }.map { (pair: (name: String, value: String?)) -> String in
                guard let value = pair.value else { return pair.name }
                return pair.name + "=" + value
            }
            resource += "?" + items.joined(separator: "&")
        }
        return resource
    }

    /// Whether the request names a bucket path style without the slash
    /// after it (`/bucket`), which signers write either way.
    static func isBareBucket(_ head: HTTPRequestHead, virtualHostBucket: String?) -> Bool {
        let path = rawPath(head.target)
        return virtualHostBucket == nil && path.count > 1 && !path.dropFirst().contains("/")
    }

    /// The path as sent (still percent-encoded, as the client signed it).
    private static func rawPath(_ target: String) -> String {
        target.firstIndex(of: "?").map { String(target[..<$0]) } ?? target
    }

    static func signature(secret: String, stringToSign: String) -> String {
        let mac = HMAC<Insecure.SHA1>.authenticationCode(for: Array(stringToSign.utf8), using: SymmetricKey(data: Array(secret.utf8)))
        return Data(mac).base64EncodedString()
    }
}
