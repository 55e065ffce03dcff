/// The result of a finished write.
public struct PutOutcome: Sendable {
    /// true: the key is new (201); false: it replaced a value (204).
    public let created: Bool
    public let metadata: ValueMetadata

    package init(created: Bool, metadata: ValueMetadata) {
        self.created = created
        self.metadata = metadata
    }
}
