/// How an S3 object key that Larder's key rules refuse is kept: S3 allows
/// empty segments (`photos/`, the folder markers consoles and Hadoop make;
/// `a//b`) and `.` and `..` segments, Larder keys do not. Such a segment is
/// kept with a space in front (`photos/` is the Larder key `photos/ `,
/// `a//b` is `a/ /b`, `./x` is ` ./x`), and so is a segment of the same
/// shape that already has spaces in front (` ` is `  `, ` ..` is `  ..`):
/// any run of spaces followed by nothing, `.` or `..`. Every S3 key then has
/// exactly one Larder key and back, and every key Larder took before (a
/// segment such as ` report.pdf`, which is not of that shape) is its own
/// Larder key, byte for byte.
///
/// A space is the lowest byte a key may hold, so a folder marker lists where
/// S3 lists it (before everything under it); only keys with an empty
/// segment before another, or a `.` or `..` segment, may list in another
/// order than S3's beside segments that start with `!` to `.` (docs/s3.md
/// says so).
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
        let bytes = Array(key)
        guard bytes.contains(space) else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var start = 0
        for index in 0...bytes.count where index == bytes.count || bytes[index] == slash {
            let segment = bytes[start..<index]
            // Kept segments: one space or more, then nothing, `.` or `..`.
            if segment.first == space && isSpecial(segment.dropFirst()) { out += segment.dropFirst() } else { out += segment }
            if index < bytes.count { out.append(slash) }
            start = index + 1
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
        // Only spaces and dots: it begins both kept segments (which gain a
        // space) and others (which do not), so no one Larder prefix.
        if !partial.isEmpty && partial.allSatisfy({ $0 == space || $0 == dot }) { return nil }
        let out = cut > 0 ? escape(Array(prefix[..<(cut - 1)])) + [slash] : []
        return out + partial
    }

    /// Whether a segment is kept with a space in front: spaces (or none),
    /// then nothing, `.` or `..`.
    private static func isSpecial(_ segment: ArraySlice<UInt8>) -> Bool {
        let rest = segment.drop { $0 == space }
        return rest.isEmpty || rest.elementsEqual([dot]) || rest.elementsEqual([dot, dot])
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
