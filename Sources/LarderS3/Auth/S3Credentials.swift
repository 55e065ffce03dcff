import Foundation

/// The access keys the S3 face accepts, each with its secret.
///
/// With none configured the server takes one fixed, documented pair
/// (`S3Credentials.defaults`, as MinIO ships `minioadmin`): every request
/// is still verified, so a test that signs with a wrong secret sees what
/// it would see on S3, and nothing is open to a client that signs nothing.
public struct S3Credentials: Sendable {
    /// `larder` / `larder-secret`: the pair used when none is configured.
    public static let defaultAccessKey = "larder"
    public static let defaultSecretKey = "larder-secret"
    public static let defaults = S3Credentials(keys: [defaultAccessKey: defaultSecretKey])

    /// Secret by access key.
    public let keys: [String: String]

    public init(keys: [String: String]) {
        self.keys = keys
    }

    public func secret(for accessKey: String) -> String? { keys[accessKey] }

    /// A credentials file: one `ACCESS_KEY SECRET [NAMESPACE]` a line,
    /// blank lines and `#` comments skipped. A NAMESPACE is refused for
    /// now (binding a key to a namespace is a later step of the S3 face):
    /// a key silently served from the default namespace would mix the data
    /// of workers that meant to be apart.
    public static func parse(file text: String, path: String) throws -> S3Credentials {
        var keys: [String: String] = [:]
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            let at = "\(path):\(number + 1)"
            switch fields.count {
            case 2:
                break
            case 3:
                throw S3CredentialsError("\(at): namespaces per access key are not supported yet; give ACCESS_KEY SECRET")
            default:
                throw S3CredentialsError("\(at): expected ACCESS_KEY SECRET, found \(fields.count) fields")
            }
            if keys[fields[0]] != nil { throw S3CredentialsError("\(at): the access key \(fields[0]) is given twice") }
            keys[fields[0]] = fields[1]
        }
        if keys.isEmpty { throw S3CredentialsError("\(path): no access key in the file") }
        return S3Credentials(keys: keys)
    }

    /// `parse(file:)` of the file at `path`.
    public static func load(path: String) throws -> S3Credentials {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw S3CredentialsError("cannot read the S3 credentials file \(path)")
        }
        return try parse(file: String(decoding: data, as: UTF8.self), path: path)
    }
}

/// A credentials file or setting that cannot be used; the message says why.
public struct S3CredentialsError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
