import LarderStorage
import LarderValueFile

// Placeholder so the tree compiles while the one-transaction restore is
// written (replaced before this lands).
extension PostgresStore {
    public func beginRestore(under prefix: StorePrefix, replace: Bool) throws -> any RestoreTransaction {
        throw StoreError.backendUnavailable("restore is being rewritten")
    }
}
