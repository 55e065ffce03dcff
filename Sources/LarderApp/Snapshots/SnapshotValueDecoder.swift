import LarderJSON
import LarderSupport

/// Decodes the value member of a long snapshot line as it arrives: the
/// bytes after the string's opening quote go in, the value's bytes come out
/// in pieces the size of the input, never the whole value.
///
/// `text` is the JSON string's UTF-8; `base64` is the JSON string (escapes
/// decoded, so `\/` works like `/`) run through a base64 decoder.
struct SnapshotValueDecoder {
    private var string = JSONStringDecoder()
    private var base64: Base64.Decoder?
    /// The string's bytes of the current piece (base64 text), reused.
    private var text: [UInt8] = []
    /// The value's bytes of the current piece, reused.
    private var bytes: [UInt8] = []
    /// Bytes of value produced so far.
    private(set) var size: Int64 = 0
    private let maxBytes: Int64

    init(_ member: SnapshotLine.ValueMember, maxBytes: Int64) {
        precondition(member != .json, "a json member is never streamed")
        self.maxBytes = maxBytes
        if member == .base64 { base64 = Base64.Decoder() }
    }

    /// Whether the string's closing quote has been read.
    var isEnded: Bool { string.isEnded }

    /// Decodes a piece, handing the value's bytes to `emit`. Returns how many
    /// input bytes belong to the string: all of them up to its closing quote.
    mutating func decode(_ input: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) throws -> Void) throws -> Int {
        let used: Int
        do {
            if base64 == nil {
                bytes.removeAll(keepingCapacity: true)
                used = try string.decode(input, into: &bytes)
            } else {
                text.removeAll(keepingCapacity: true)
                used = try string.decode(input, into: &text)
                bytes.removeAll(keepingCapacity: true)
                try text.withUnsafeBytes { try base64!.decode($0, into: &bytes) }
                if string.isEnded { try base64!.finish(into: &bytes) }
            }
        } catch let error as JSONParseError {
            throw SnapshotLineError("the value string is not valid JSON: \(error.message) of the value")
        } catch let error as Base64.DecodingError {
            throw SnapshotLineError("\(error)")
        }
        size += Int64(bytes.count)
        guard size <= maxBytes else {
            throw SnapshotLineError("the value is larger than \(maxBytes) bytes", tooLarge: true)
        }
        if !bytes.isEmpty { try bytes.withUnsafeBytes { try emit($0) } }
        return used
    }
}
