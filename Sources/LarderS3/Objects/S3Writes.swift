import LarderStorage
import LarderStoreVocabulary
import LarderValueFile

extension ValueStore {
    /// A write of `key` as the S3 face makes every one: its bytes stored as
    /// sent (never a client's gzip taken apart), no expiry, `attributes`
    /// kept with it (their room fixed now: a digest filled in later keeps
    /// the length) and `length`, when known, planned for. The writer is
    /// aborted if either is refused.
    func beginS3Write(_ key: StoreKey, contentType: String, condition: WriteCondition?, attributes: [UInt8]?,
                      length: Int64? = nil) throws -> ValueWriter {
        let writer = try beginUpload(key: key, contentType: contentType, encoding: .identity, expiresNanos: nil, condition: condition)
        do {
            if let attributes { try writer.setAttributes(attributes) }
            if let length { try writer.expect(bytes: length) }
        } catch {
            writer.abort()
            throw error
        }
        return writer
    }
}
