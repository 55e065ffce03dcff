/// A slow link's budget (`HTTPNetworkFault.pace`, and a request body read
/// at a fault's rate): how many bytes may have moved by now at
/// `bytesPerSecond` since `start`, counted against what did move. Bytes are
/// let through in slices of a tenth of a second, so a paced transfer wakes
/// its connection's timer ten times a second, not once per byte.
struct ByteRate {
    let bytesPerSecond: Int
    let start: UInt64
    /// Bytes moved so far.
    private(set) var used: Int64 = 0
    /// A whole slice came due and its bytes are still moving: what is
    /// left of them moves without waiting for another whole slice (one
    /// wake moves all it may, however many pieces that takes).
    private var granting = false

    /// The fastest pace: 1 TiB/s (the arithmetic stays far from overflow).
    static let maxBytesPerSecond = 1 << 40

    init(bytesPerSecond: Int, start: UInt64) {
        self.bytesPerSecond = min(max(1, bytesPerSecond), Self.maxBytesPerSecond)
        self.start = start
    }

    private var slice: Int64 { max(1, Int64(bytesPerSecond) / 10) }

    /// Bytes that may move now (0: wait until `nextSlice`).
    mutating func allowance(now: UInt64) -> Int64 {
        let elapsed = now > start ? now - start : 0
        let earned = Int64(min((Double(elapsed) * Double(bytesPerSecond) / 1e9).rounded(.down), 9e18))
        let open = earned - used
        // Whole slices only: a paced transfer wakes ten times a second,
        // and moves all that came due in each wake.
        guard open > 0, granting || open >= slice else {
            granting = false
            return 0
        }
        granting = true
        return open
    }

    /// When the next slice may move (uptime nanoseconds).
    func nextSlice() -> UInt64 {
        let due = Double(used + slice) * 1e9 / Double(bytesPerSecond)
        return start + UInt64(min(due, 1e17))
    }

    mutating func moved(_ n: Int64) { used += n }
}
