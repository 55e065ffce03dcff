import FoundationEssentials

/// The access keys the S3 face accepts, each with its secret.
///
/// With none configured the server takes one fixed, documented pair
/// (`S3Credentials.defaults`, as MinIO ships `minioadmin`): every request
/// is still verified, so a test that signs with a wrong secret sees what
/// it would see on S3, and nothing is open to a client that signs nothing.
package struct S3Credentials: Sendable {
    /// `larder` / `larder-secret`: the pair used when none is configured.
    package static let defaultAccessKey = "larder"
    package static let defaultSecretKey = "larder-secret"
    package static let defaults = S3Credentials(keys: [defaultAccessKey: defaultSecretKey])
    /// No key: every request is refused (`S3Configuration.acceptedKeys`).
    package static let none = S3Credentials(keys: [:])

    /// Secret by access key.
    package let keys: [String: String]
    /// The namespace an access key works in, by access key; a key not in
    /// here works in the default namespace. The server checks the names
    /// when it starts (`LarderServer`: namespace names are its rules).
    package let namespaces: [String: String]

    package init(keys: [String: String], namespaces: [String: String] = [:]) {
        self.keys = keys
        self.namespaces = namespaces
    }

    package func secret(for accessKey: String) -> String? { keys[accessKey] }

    /// The namespace `accessKey` works in; nil: the default one.
    package func namespace(for accessKey: String) -> String? { namespaces[accessKey] }

    /// A credentials file: one `ACCESS_KEY SECRET [NAMESPACE]` a line,
    /// blank lines and `#` comments skipped. A key with a NAMESPACE reads
    /// and writes that namespace's store (one key per test worker).
    package static func parse(file text: String, path: String) throws -> S3Credentials {
        var keys: [String: String] = [:]
        var namespaces: [String: String] = [:]
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingWhitespaceAndNewlines()
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            let at = "\(path):\(number + 1)"
            switch fields.count {
            case 2, 3:
                break
            default:
                throw S3CredentialsError("\(at): expected ACCESS_KEY SECRET [NAMESPACE], found \(fields.count) fields")
            }
            if keys[fields[0]] != nil { throw S3CredentialsError("\(at): the access key \(fields[0]) is given twice") }
            keys[fields[0]] = fields[1]
            if fields.count == 3 { namespaces[fields[0]] = fields[2] }
        }
        if keys.isEmpty { throw S3CredentialsError("\(path): no access key in the file") }
        return S3Credentials(keys: keys, namespaces: namespaces)
    }

    /// `parse(file:)` of the file at `path`.
    package static func load(path: String) throws -> S3Credentials {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw S3CredentialsError("cannot read the S3 credentials file \(path)")
        }
        return try parse(file: String(decoding: data, as: UTF8.self), path: path)
    }
}

/// A credentials file or setting that cannot be used; the message says why.
package struct S3CredentialsError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
