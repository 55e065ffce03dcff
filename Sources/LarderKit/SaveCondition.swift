/// When a write may happen: the compare-and-swap of processes that share a key.
public enum SaveCondition: Sendable, Hashable {
    /// Always.
    case none
    /// Only if the stored value is this version (an ETag from a fetch or a
    /// write, either representation's tag): `If-Match`.
    case ifMatch(String)
    /// Only if the key has no value: create-only, `If-None-Match: *`.
    case ifAbsent
}
