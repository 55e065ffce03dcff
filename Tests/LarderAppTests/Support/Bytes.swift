import CZlib
import Foundation

/// Deterministic test data and checksums.
enum Bytes {
    /// `count` pseudo-random bytes from `seed` (xorshift), partly repetitive
    /// so gzip has something to do.
    static func pattern(seed: UInt64, count: Int) -> [UInt8] {
        var state = seed &* 0x9E3779B97F4A7C15 | 1
        var out = [UInt8](repeating: 0, count: count)
        var i = 0
        while i < count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            // Every other 8-byte word is text-like, every other random.
            let word = (i / 8) % 2 == 0 ? state : 0x2020_6465_7473_6574 &+ (state & 0x0707_0707)
            for b in 0..<8 where i + b < count { out[i + b] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(b))) }
            i += 8
        }
        return out
    }

    static func crc32(_ bytes: [UInt8], _ crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { crc32($0, crc) }
    }

    static func crc32(_ bytes: UnsafeRawBufferPointer, _ crc: UInt32 = 0) -> UInt32 {
        UInt32(CZlib.crc32(uLong(crc), bytes.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(bytes.count)))
    }

    /// Runs a program and returns its exit status and standard output.
    @discardableResult
    static func run(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: [UInt8]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, Array(data))
    }

    /// Every regular file below `directory` (links not followed).
    static func files(under directory: String) -> [String] {
        guard let e = FileManager.default.enumerator(atPath: directory) else { return [] }
        var out: [String] = []
        while let relative = e.nextObject() as? String {
            let path = directory + "/" + relative
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue { out.append(path) }
        }
        return out
    }
}
