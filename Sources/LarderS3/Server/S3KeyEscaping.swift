/// How an S3 object key that Larder's key rules refuse is kept: S3 allows
/// empty segments (`photos/`, the folder markers consoles and Hadoop make;
/// `a//b`) and `.` and `..` segments, Larder keys do not. Each such segment
/// is kept with a space in front (`photos/` is the Larder key `photos/ `,
/// `a//b` is `a/ /b`, `./x` is ` ./x`), and so is a segment that starts
/// with a space (` x` is `  x`), so every S3 key has exactly one Larder key
/// and back: a Larder segment that starts with a space is the S3 segment
/// after it.
///
/// Every other key is its own Larder key, byte for byte. A space is the
/// lowest byte a key may hold, so a folder marker lists where S3 lists it
/// (before everything under it); only keys with an empty segment before
/// another, or a `.` or `..` segment, may list in another order than S3's
/// beside segments that start with `!` to `.` (docs/s3.md says so).
enum S3KeyEscaping {
    static let space: UInt8 = 0x20
    static let slash: UInt8 = 0x2F
    static let dot: UInt8 = 0x2E

    /// The Larder key bytes (bucket not included) of an S3 object key.
    static func escape(_ key: [UInt8]) -> [UInt8] {
        guard needsEscaping(key) else { return key }
        var out: [UInt8] = []
        out.reserveCapacity(key.count + 4)
        var start = 0
        for index in 0...key.count where index == key.count || key[index] == slash {
            let segment = key[start..<index]
            if isSpecial(segment) { out.append(space) }
            out += segment
            if index < key.count { out.append(slash) }
            start = index + 1
        }
        return out
    }

    /// The S3 object key of Larder key bytes (bucket not included).
    static func unescape(_ key: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(key.count)
        var atSegmentStart = true
        for byte in key {
            if atSegmentStart && byte == space {
                atSegmentStart = false
                continue
            }
            atSegmentStart = byte == slash
            out.append(byte)
        }
        return out
    }

    /// `unescape` as text.
    static func unescape(_ key: String) -> String {
        String(decoding: unescape(Array(key.utf8)), as: UTF8.self)
    }

    /// The Larder form of an S3 listing prefix: its whole segments escaped,
    /// and its last, partial one as the keys that start with it begin in
    /// Larder. Nil when the partial segment is `.` or `..`: keys starting
    /// with it begin with ` .` or with `.` in Larder, no one prefix.
    static func escapePrefix(_ prefix: [UInt8]) -> [UInt8]? {
        let cut = prefix.lastIndex(of: slash).map { $0 + 1 } ?? 0
        let partial = prefix[cut...]
        if partial.elementsEqual([dot]) || partial.elementsEqual([dot, dot]) { return nil }
        var out = cut > 0 ? escape(Array(prefix[..<(cut - 1)])) + [slash] : []
        if partial.first == space { out.append(space) }
        return out + partial
    }

    /// Whether a segment is kept with a space in front.
    private static func isSpecial(_ segment: ArraySlice<UInt8>) -> Bool {
        switch segment.count {
        case 0: true
        case 1: segment.first == dot || segment.first == space
        case 2: segment.first == space || (segment.first == dot && segment.last == dot)
        default: segment.first == space
        }
    }

    /// A quick look first: most keys have no special segment.
    private static func needsEscaping(_ key: [UInt8]) -> Bool {
        if key.isEmpty || key.first == slash || key.last == slash || key.first == space || key.first == dot { return true }
        for index in 1..<key.count where key[index - 1] == slash {
            let c = key[index]
            if c == slash || c == space || c == dot { return true }
        }
        return false
    }
}
