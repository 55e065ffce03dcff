import LarderSupport
import LarderStoreVocabulary
/// Where a `ValueUpload` ends up. The upload encodes the body into a temp
/// file (gzip, Larder's header, segments) the same way for every store;
/// the destination makes that file the key's value: the disk store renames
/// it into place, the PostgreSQL store copies it into the database.
package protocol UploadDestination: AnyObject, Sendable {
    var zlib: ZlibPool { get }
    var compressionModes: CompressionModeCounts? { get }
    /// A version for the file's header. A store that assigns versions when
    /// the write commits overwrites it then.
    func nextVersion() throws -> UInt64
    /// Completes `upload` (`ValueUpload.complete`) and publishes it,
    /// checking its write condition atomically with the publish: now, or
    /// later without holding the caller's thread while it waits.
    func finishUpload(_ upload: ValueUpload) -> StoreReply<PutOutcome>
    /// Whether a value that arrives whole and is shorter than
    /// `CompressionMode.storedWholeBelow` is kept as one stored deflate
    /// block, with no zlib stream at all: where its file takes one disk
    /// block whatever its bytes (the disk store), deflating it saves no
    /// space and was a third of a small PUT's instructions. Where the bytes
    /// themselves are the cost (PostgreSQL's rows), no.
    var storesSmallValuesUncompressed: Bool { get }
    /// The value's modification time, now (its namespace's clock, which a
    /// test may have moved).
    func modifiedNanos() -> Int64
}

extension UploadDestination {
    package var storesSmallValuesUncompressed: Bool { false }
    package func modifiedNanos() -> Int64 { Clock.nowNanos() }
}
