import FoundationEssentials
import LarderHTTP
import LarderSupport

/// An object's tags, S3's way: up to 10, keys of 1–128 characters and
/// values of up to 256, each key once; sent as `x-amz-tagging` (a URL
/// query string) on PutObject, CopyObject and CreateMultipartUpload, or as a
/// `<Tagging>` document on PutObjectTagging. Kept with the object among its
/// headers under `x-amz-tagging`, in query-string form; answers give their
/// count (`x-amz-tagging-count`), GetObjectTagging the set.
struct ObjectTagging: Equatable {
    var tags: [(key: String, value: String)]

    /// The kept header's name (never answered as is: see `countHeader`).
    static let header = "x-amz-tagging"
    static let countHeader = "x-amz-tagging-count"
    static let maxTags = 10, maxKeyLength = 128, maxValueLength = 256

    static func == (a: ObjectTagging, b: ObjectTagging) -> Bool {
        a.tags.map(\.key) == b.tags.map(\.key) && a.tags.map(\.value) == b.tags.map(\.value)
    }

    /// From `x-amz-tagging` (`k1=v1&k2=v2`, percent-encoded).
    init(query: String) throws(S3Error) {
        var tags: [(key: String, value: String)] = []
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ text: Substring) -> String {
                PercentDecoding.decodeString(Substring(text.replacing("+", with: " "))) ?? String(text)
            }
            tags.append((decoded(parts[0]), parts.count > 1 ? decoded(parts[1]) : ""))
        }
        try self.init(checking: tags)
    }

    /// From PutObjectTagging's `<Tagging><TagSet><Tag><Key/><Value/></Tag>…`.
    init(xml body: [UInt8]) throws(S3Error) {
        let text = String(decoding: body, as: UTF8.self)
        guard text.contains("<Tagging") else { throw DeleteRequest.malformed }
        var tags: [(key: String, value: String)] = []
        var rest = Substring(text)
        while let open = rest.firstRange(of: "<Tag>") {
            guard let close = rest[open.upperBound..<rest.endIndex].firstRange(of: "</Tag>") else { throw DeleteRequest.malformed }
            let tag = rest[open.upperBound..<close.lowerBound]
            guard let key = Self.element("Key", in: tag) else { throw DeleteRequest.malformed }
            tags.append((try DeleteRequest.unescape(key), try DeleteRequest.unescape(Self.element("Value", in: tag) ?? "")))
            rest = rest[close.upperBound...]
        }
        try self.init(checking: tags)
    }

    private init(checking tags: [(key: String, value: String)]) throws(S3Error) {
        guard tags.count <= Self.maxTags else { throw Self.invalid("Object tags cannot be greater than \(Self.maxTags)") }
        var seen = Set<String>()
        for (key, value) in tags {
            guard !key.isEmpty, key.count <= Self.maxKeyLength else {
                throw Self.invalid("The TagKey you have provided is invalid (1 to \(Self.maxKeyLength) characters)")
            }
            guard value.count <= Self.maxValueLength else {
                throw Self.invalid("The TagValue you have provided is invalid (up to \(Self.maxValueLength) characters)")
            }
            guard seen.insert(key).inserted else { throw Self.invalid("Cannot provide multiple Tags with the same key") }
        }
        self.tags = tags
    }

    private static func invalid(_ message: String) -> S3Error { S3Error(.badRequest, "InvalidTag", message) }

    private static func element(_ name: String, in text: Substring) -> Substring? {
        guard let open = text.firstRange(of: "<\(name)>"), let close = text[open.upperBound..<text.endIndex].firstRange(of: "</\(name)>")
        else { return nil }
        return text[open.upperBound..<close.lowerBound]
    }

    /// The kept header's value: the tags as a query string.
    var query: String {
        tags.map { AWSURIEncoding.encode($0.key.utf8, keepSlash: false) + "=" + AWSURIEncoding.encode($0.value.utf8, keepSlash: false) }
            .joined(separator: "&")
    }

    /// The tags a write asks for (`x-amz-tagging`), as the header to keep; none when it names none.
    static func kept(_ headers: HTTPHeaders) throws(S3Error) -> [(name: String, value: String)] {
        guard let text = headers[header] else { return [] }
        let tagging = try ObjectTagging(query: text)
        return tagging.tags.isEmpty ? [] : [(header, tagging.query)]
    }

    /// The tags kept among an object's headers.
    static func of(_ kept: [(name: String, value: String)]) -> ObjectTagging {
        guard let text = kept.first(where: { $0.name == header })?.value, let tagging = try? ObjectTagging(query: text) else {
            return ObjectTagging(unchecked: [])
        }
        return tagging
    }

    private init(unchecked tags: [(key: String, value: String)]) { self.tags = tags }

    /// No tags.
    init() { tags = [] }

    /// GetObjectTagging's answer: the tags by key, as S3 keeps them (a set, not a list).
    func xml() -> S3XML {
        var xml = S3XML()
        xml.open("Tagging", namespaced: true)
        xml.open("TagSet")
        for (key, value) in tags.sorted(by: { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }) {
            xml.open("Tag")
            xml.element("Key", key)
            xml.element("Value", value)
            xml.close("Tag")
        }
        xml.close("TagSet")
        xml.close("Tagging")
        return xml
    }
}
