import FoundationEssentials
import LarderHTTP

/// The access key a request says it is signed with (`Credential=KEY/…` of
/// its `Authorization`, or `X-Amz-Credential=KEY%2F…` of a presigned URL;
/// Version 2's `AWS KEY:…` and `AWSAccessKeyId=KEY`),
/// before or without its signature being checked: only to pick whose
/// journal a refused request goes in, never to grant anything.
enum S3ClaimedKey {
    static func of(_ head: HTTPRequestHead) -> String? {
        if let header = head.headers["Authorization"], let range = header.firstRange(of: "Credential=") {
            let key = header[range.upperBound...].prefix { $0 != "/" && $0 != "," && $0 != " " }
            return key.isEmpty ? nil : String(key)
        }
        // Signature Version 2: `AWS KEY:signature`, or `AWSAccessKeyId=KEY`.
        if let header = head.headers["Authorization"], header.hasPrefix("AWS ") {
            let key = header.dropFirst(4).prefix { $0 != ":" }
            return key.isEmpty ? nil : String(key)
        }
        if let query = head.query, let range = query.firstRange(of: "AWSAccessKeyId=") {
            let key = query[range.upperBound...].prefix { $0 != "&" }
            return key.isEmpty ? nil : String(key)
        }
        if let query = head.query, let range = query.firstRange(of: "X-Amz-Credential=") {
            let value = query[range.upperBound...].prefix { $0 != "&" }
            let escapedSlash = [value.firstRange(of: "%2F"), value.firstRange(of: "%2f")].compactMap { $0 }
                .min { $0.lowerBound < $1.lowerBound }
            let key = escapedSlash.map { value[..<$0.lowerBound] } ?? value.prefix { $0 != "/" }
            return key.isEmpty ? nil : String(key)
        }
        return nil
    }
}
