/// Bytes waiting to be written to the temp file. It starts small (most
/// values are) and doubles up to `limit`; a large allocation per write
/// would cost an mmap, page faults and an munmap every time.
struct PendingBytes {
    private var storage: UnsafeMutableRawBufferPointer
    private let limit: Int
    var count = 0

    init(capacity: Int, limit: Int) {
        storage = .allocate(byteCount: capacity, alignment: 16)
        self.limit = limit
    }

    func deallocate() { storage.deallocate() }

    var room: Int { storage.count - count }
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[0..<count]) }
    var free: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(rebasing: storage[count...]) }

    /// Doubles the capacity; false once at the limit (then flush instead).
    mutating func grow() -> Bool {
        guard storage.count < limit else { return false }
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: min(storage.count * 2, limit), alignment: 16)
        bigger.baseAddress!.copyMemory(from: storage.baseAddress!, byteCount: count)
        storage.deallocate()
        storage = bigger
        return true
    }

    mutating func append(_ data: UnsafeRawBufferPointer) {
        (storage.baseAddress! + count).copyMemory(from: data.baseAddress!, byteCount: data.count)
        count += data.count
    }

    func overwrite(at offset: Int, with data: UnsafeRawBufferPointer) {
        (storage.baseAddress! + offset).copyMemory(from: data.baseAddress!, byteCount: data.count)
    }
}
