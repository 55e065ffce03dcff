import LarderValueFile
import LarderStoreVocabulary
/// The write conditions every front end shares, without HTTP types: the
/// server builds its RFC 9110 checks on top, the embedded API uses these
/// directly. They throw `StoreError.preconditionFailed`, which each front
/// end turns into its own "412".
public enum WriteConditions {
    /// A write that must create: the key is absent (or expired).
    public static let mustNotExist: WriteCondition = { meta in
        if meta != nil { throw StoreError.preconditionFailed }
    }

    /// A write that must replace the version `tag` names: either
    /// representation's strong ETag (identity or gzip, quotes included,
    /// as docs/http-api.md gives both), or `*` for "any current value". A weak or
    /// unknown tag never matches, as `If-Match` compares strongly.
    public static func mustMatch(_ tag: String) -> WriteCondition {
        let tag = trimmed(tag)
        return { meta in
            guard let meta else { throw StoreError.preconditionFailed }
            if tag == "*" { return }
            // Byte comparison: entity tags are opaque octets.
            if !tag.utf8.elementsEqual(meta.etag.utf8) && !tag.utf8.elementsEqual(meta.gzipETag.utf8) {
                throw StoreError.preconditionFailed
            }
        }
    }

    /// Header values may arrive with spaces around them; the tag itself has none.
    private static func trimmed(_ s: String) -> String {
        var sub = Substring(s)
        while let f = sub.first, f == " " || f == "\t" { sub = sub.dropFirst() }
        while let l = sub.last, l == " " || l == "\t" { sub = sub.dropLast() }
        return String(sub)
    }
}
