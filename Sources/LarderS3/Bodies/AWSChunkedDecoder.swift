import Foundation

/// Takes the `aws-chunked` framing off a body as it streams in:
/// `hex-size[;ext]\r\n` data `\r\n` … `0\r\n`, trailer lines
/// (`x-amz-checksum-crc32:…\r\n`), and a blank line. Only the data goes on,
/// so what is stored is the object, never its framing. Holds no more than
/// one framing line, however large the chunks.
struct AWSChunkedDecoder {
    /// A framing line longer than this is refused (no client writes one).
    static let maxLineBytes = 4096

    private enum State {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailers
        case done
    }

    private var state = State.size
    private var line: [UInt8] = []
    /// The trailing headers, lower-case names, as sent.
    private(set) var trailers: [String: String] = [:]

    /// Whether the whole body (last chunk and trailers) has been read.
    var isComplete: Bool { if case .done = state { true } else { false } }

    /// Decodes `bytes`, handing each run of object bytes to `emit`.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        var i = 0
        while i < bytes.count {
            switch state {
            case .data(let remaining):
                let n = min(remaining, bytes.count - i)
                try emit(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + n)]))
                i += n
                state = remaining - n == 0 ? .dataEnd : .data(remaining: remaining - n)
            case .done:
                throw S3Error.incompleteBody("bytes after the end of the aws-chunked body")
            case .size, .dataEnd, .trailers:
                let b = bytes[i]
                i += 1
                line.append(b)
                if line.count > Self.maxLineBytes { throw S3Error.incompleteBody("an aws-chunked framing line is too long") }
                if line.count >= 2, line[line.count - 2] == 0x0D, b == 0x0A {
                    line.removeLast(2)
                    try endLine()
                    line.removeAll(keepingCapacity: true)
                }
            }
        }
    }

    private mutating func endLine() throws {
        switch state {
        case .size:
            // The size ends at `;` (a chunk signature or extension follows).
            let digits = line.prefix { $0 != 0x3B }
            guard !digits.isEmpty, digits.count <= 16, let size = Int(String(decoding: digits, as: UTF8.self), radix: 16) else {
                throw S3Error.incompleteBody("an aws-chunked chunk size is not hexadecimal")
            }
            state = size == 0 ? .trailers : .data(remaining: size)
        case .dataEnd:
            guard line.isEmpty else { throw S3Error.incompleteBody("an aws-chunked chunk is longer than its size") }
            state = .size
        case .trailers:
            if line.isEmpty { state = .done; return }
            guard let colon = line.firstIndex(of: 0x3A) else {
                throw S3Error.incompleteBody("an aws-chunked trailer line has no ':'")
            }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces)
            trailers[name] = value
        case .data, .done:
            preconditionFailure("lines are read in framing states only")
        }
    }
}
