/// The result of a finished write.
package struct PutOutcome: Sendable {
    /// true: the key is new (201); false: it replaced a value (204).
    package let created: Bool
    package let metadata: ValueMetadata

    package init(created: Bool, metadata: ValueMetadata) {
        self.created = created
        self.metadata = metadata
    }
}
