import LarderStorage
import LarderValueFile
import Dispatch
import FoundationEssentials
import LarderModel
import LarderSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

public struct DiskStoreOptions: Sendable {
    public var dataDirectory: String
    /// Make each write durable before it is acknowledged (flushes shared
    /// between concurrent writes: `GroupCommit`). Off: no flush at all.
    public var fsync: Bool = true
    /// zlib level for values the store compresses itself (1...9).
    public var gzipLevel: Int32 = DiskStoreOptions.defaultGzipLevel
    /// Stripes of the per-key write barrier.
    public var stripes: Int = 64
    /// Bytes of small values kept in memory for reads (0 turns it off).
    public var cacheBytes: Int = DiskStoreOptions.defaultCacheBytes
    /// Largest value, decompressed (a gzip body may not inflate past it).
    public var maxValueSize: Int64 = ServerDefaults.maxValueSize
    /// OR-ed into every version this store hands out. Versions are wall-clock
    /// nanoseconds (below 2^63 until 2262), so a store with the top bit as its
    /// tag (the fixture layer's) never repeats another store's ETag.
    public var versionTag: UInt64 = 0
    /// Tests: called by the start-up scan with the keys of each batch of
    /// headers it read, before it adds them to the index.
    var scanBatchHook: (@Sendable ([String]) -> Void)? = nil
    /// Tests: called before each walk of the start-up scan with its attempt
    /// number (0 first); throwing fails that walk as a failing directory would.
    var scanWalkHook: (@Sendable (_ attempt: Int) throws -> Void)? = nil

    /// The value files' default level (`CompressionMode.defaultGzipLevel`).
    public static let defaultGzipLevel: Int32 = CompressionMode.defaultGzipLevel
    /// 32 MiB of small values in memory (`--cache-mb`).
    public static let defaultCacheBytes = 32 << 20
    /// Where `larder` keeps its data unless told (`--data-dir`).
    public static let defaultDataDirectory = "./larder-data"

    public init(dataDirectory: String, fsync: Bool = true, gzipLevel: Int32 = DiskStoreOptions.defaultGzipLevel) {
        self.dataDirectory = dataDirectory
        self.fsync = fsync
        self.gzipLevel = gzipLevel
    }
}
