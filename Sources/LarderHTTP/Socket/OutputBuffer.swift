/// The bytes a connection has yet to send: headers and body pieces go into
/// one contiguous buffer so a response leaves in one `send`.
struct OutputBuffer {
    private(set) var storage: UnsafeMutableRawBufferPointer
    private(set) var start = 0
    private(set) var end = 0

    /// Whether `storage` is the connection's standard buffer of whole pages
    /// (`PageMemory`, which an idle connection hands back to the kernel),
    /// or a larger one from malloc while a large answer goes out (malloc
    /// keeps reusing those without page faults; `shrink` returns to pages).
    private var mapped = true

    init(capacity: Int) {
        storage = PageMemory.allocate(capacity)
    }

    /// An idle connection's buffer, empty: its pages go back to the kernel
    /// (they read as zeros when next touched), the mapping stays.
    func releasePages() {
        guard isEmpty, mapped else { return }
        PageMemory.release(storage)
    }

    func deallocate() { free(storage) }

    private func free(_ buffer: UnsafeMutableRawBufferPointer) {
        if mapped { PageMemory.deallocate(buffer) } else { buffer.deallocate() }
    }

    var count: Int { end - start }
    var isEmpty: Bool { start == end }
    var unsent: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[start..<end]) }

    mutating func consumed(_ n: Int) {
        start += n
        if start == end { start = 0; end = 0 }
    }

    /// Makes room for `n` more bytes, moving or growing the storage. (The
    /// check inlined into every append; the move or growth is not.)
    @inline(__always)
    mutating func reserve(_ n: Int) {
        if storage.count - end >= n { return }
        makeRoom(n)
    }

    @inline(never)
    private mutating func makeRoom(_ n: Int) {
        if start > 0 {
            let live = end - start
            storage.baseAddress!.copyMemory(from: storage.baseAddress! + start, byteCount: live)
            start = 0
            end = live
            if storage.count - end >= n { return }
        }
        var capacity = storage.count * 2
        while capacity - end < n { capacity *= 2 }
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
        bigger.baseAddress!.copyMemory(from: storage.baseAddress!, byteCount: end)
        free(storage)
        storage = bigger
        mapped = false
    }

    /// Gives back memory after a large response, once drained.
    mutating func shrink(to capacity: Int) {
        guard isEmpty, storage.count > capacity else { return }
        free(storage)
        storage = PageMemory.allocate(capacity)
        mapped = true
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        reserve(bytes.count)
        (storage.baseAddress! + end).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        end += bytes.count
    }

    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    mutating func append(_ text: String) {
        // A native string's UTF-8 in place (a small one's from the stack).
        if let done: Void = text.utf8.withContiguousStorageIfAvailable({ append(UnsafeRawBufferPointer($0)) }) { return done }
        var text = text
        text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// A non-negative integer in decimal, written in place (no array: this
    /// is every answer's Content-Length).
    mutating func append(decimal value: Int64) {
        var digits = 1
        var rest = value / 10
        while rest > 0 { digits += 1; rest /= 10 }
        reserve(digits)
        var v = value
        var i = end + digits - 1
        repeat { storage[i] = UInt8(truncatingIfNeeded: 0x30 + v % 10); v /= 10; i -= 1 } while v > 0
        end += digits
    }

    /// Lets `fill` write up to `max` bytes at the end; it returns how many it wrote.
    mutating func fill(max: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) rethrows -> Int {
        reserve(max)
        let n = try fill(UnsafeMutableRawBufferPointer(rebasing: storage[end..<(end + max)]))
        end += n
        return n
    }

    /// Like `fill`, framed as one chunk of chunked coding (`<hex>\r\n`,
    /// the bytes, `\r\n`); nothing at all when `fill` wrote nothing, since an
    /// empty chunk would end the body.
    mutating func fillChunk(max: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) rethrows -> Int {
        // Room for the longest size line; the data is read after it and
        // moved back to meet the actual (possibly shorter) one.
        let sizeRoom = String(max, radix: 16).utf8.count + 2
        reserve(sizeRoom + max + 2)
        let dataStart = end + sizeRoom
        let n = try fill(UnsafeMutableRawBufferPointer(rebasing: storage[dataStart..<(dataStart + max)]))
        guard n > 0 else { return 0 }
        let sizeLine = Array((String(n, radix: 16) + "\r\n").utf8)
        let base = storage.baseAddress!
        // Overlapping move: copyMemory has memmove semantics.
        (base + end + sizeLine.count).copyMemory(from: base + dataStart, byteCount: n)
        sizeLine.withUnsafeBytes { (base + end).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        end += sizeLine.count + n
        storage[end] = 0x0D
        storage[end + 1] = 0x0A
        end += 2
        return n
    }
}
