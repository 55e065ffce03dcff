import LarderHTTP
import LarderRouting

/// `If-None-Match` on a read of something with one strong tag (a viewer
/// file, a listing page): whether it names the tag (weak comparison, RFC
/// 9110 section 13.1.2) or is `*`, so the answer is a 304. A field that does
/// not parse is ignored, as if absent.
enum IfNoneMatch {
    static func matches(_ tag: String, _ ifNoneMatch: [String]) -> Bool {
        guard !ifNoneMatch.isEmpty, let condition = EntityTagCondition.parse(ifNoneMatch),
              let current = EntityTag(tag) else { return false }
        switch condition {
        case .any: return true
        case .tags(let tags): return tags.contains { $0.weakMatch(current) }
        }
    }
}
