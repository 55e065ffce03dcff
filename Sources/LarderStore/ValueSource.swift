/// Which layer a value was read from: the store, or the read-only fixtures
/// under it (`--fixtures`). Answers carry it as `Larder-Source`.
public enum ValueSource: String, Sendable {
    case store
    case fixture
}
