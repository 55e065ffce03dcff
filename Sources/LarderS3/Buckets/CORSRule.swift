/// One rule of a bucket's CORS configuration (PutBucketCors): which
/// origins may make which requests from a browser, with which headers,
/// and what the browser may read of the answer. Origins and headers may
/// hold one `*`, which stands for any run of characters.
struct CORSRule: Codable, Equatable {
    var id: String?
    var allowedOrigins: [String]
    var allowedMethods: [String]
    var allowedHeaders: [String]
    var exposeHeaders: [String]
    var maxAgeSeconds: Int?

    static let methods: Set<String> = ["GET", "PUT", "POST", "DELETE", "HEAD"]
    static let maxRules = 100

    /// The rules of a `<CORSConfiguration>` document; `MalformedXML` or
    /// `InvalidRequest` as S3 answers for a document it refuses.
    static func rules(xml body: [UInt8]) throws(S3Error) -> [CORSRule] {
        let text = Substring(String(decoding: body, as: UTF8.self))
        guard text.contains("<CORSConfiguration") else { throw DeleteRequest.malformed }
        var rules: [CORSRule] = []
        for rule in try S3XMLReader.elements("CORSRule", in: text) {
            let origins = try S3XMLReader.values("AllowedOrigin", in: rule)
            let methods = try S3XMLReader.values("AllowedMethod", in: rule)
            guard !origins.isEmpty, !methods.isEmpty else { throw DeleteRequest.malformed }
            for method in methods where !Self.methods.contains(method) {
                throw S3Error.invalidRequest("Found unsupported HTTP method in CORS config. Unsupported method is \(method)")
            }
            for origin in origins where origin.filter({ $0 == "*" }).count > 1 {
                throw S3Error.invalidRequest("AllowedOrigin \"\(origin)\" can not have more than one wildcard.")
            }
            var maxAge: Int?
            if let text = try S3XMLReader.values("MaxAgeSeconds", in: rule).first {
                guard let seconds = Int(text), seconds >= 0 else { throw DeleteRequest.malformed }
                maxAge = seconds
            }
            rules.append(CORSRule(id: try S3XMLReader.values("ID", in: rule).first, allowedOrigins: origins, allowedMethods: methods,
                                  allowedHeaders: try S3XMLReader.values("AllowedHeader", in: rule),
                                  exposeHeaders: try S3XMLReader.values("ExposeHeader", in: rule), maxAgeSeconds: maxAge))
        }
        guard !rules.isEmpty else { throw DeleteRequest.malformed }
        guard rules.count <= maxRules else { throw S3Error.invalidRequest("A CORS configuration holds at most \(maxRules) rules.") }
        return rules
    }

    /// GetBucketCors's answer.
    static func xml(_ rules: [CORSRule]) -> S3XML {
        var xml = S3XML()
        xml.open("CORSConfiguration", namespaced: true)
        for rule in rules {
            xml.open("CORSRule")
            if let id = rule.id { xml.element("ID", id) }
            for origin in rule.allowedOrigins { xml.element("AllowedOrigin", origin) }
            for method in rule.allowedMethods { xml.element("AllowedMethod", method) }
            for header in rule.allowedHeaders { xml.element("AllowedHeader", header) }
            for header in rule.exposeHeaders { xml.element("ExposeHeader", header) }
            if let seconds = rule.maxAgeSeconds { xml.element("MaxAgeSeconds", String(seconds)) }
            xml.close("CORSRule")
        }
        xml.close("CORSConfiguration")
        return xml
    }

    /// Whether the rule lets `origin` make a `method` request sending
    /// `headers` (a preflight's `Access-Control-Request-Headers`).
    func allows(origin: String, method: String, headers: [String]) -> Bool {
        allowedOrigins.contains { Self.matches(origin, $0, caseInsensitive: false) } && allowedMethods.contains(method)
            && headers.allSatisfy { header in allowedHeaders.contains { Self.matches(header, $0, caseInsensitive: true) } }
    }

    /// `text` against `pattern`, whose one `*` stands for any run of characters.
    static func matches(_ text: String, _ pattern: String, caseInsensitive: Bool) -> Bool {
        let (text, pattern) = caseInsensitive ? (text.lowercased(), pattern.lowercased()) : (text, pattern)
        guard let star = pattern.firstIndex(of: "*") else { return text == pattern }
        let prefix = pattern[..<star], suffix = pattern[pattern.index(after: star)...]
        return text.count >= prefix.count + suffix.count && text.hasPrefix(prefix) && text.hasSuffix(suffix)
    }
}
