import Foundation

/// How `Codable` values become stored bytes and back. ISO 8601 dates by
/// default; pass your own configured encoder and decoder for other choices.
///
/// The encoder and decoder are classes: configure them before handing them
/// over and do not change them after (every call reads them concurrently).
public struct LarderCoder: @unchecked Sendable {
    public let encoder: JSONEncoder
    public let decoder: JSONDecoder

    public init(encoder: JSONEncoder = LarderCoder.defaultEncoder(), decoder: JSONDecoder = LarderCoder.defaultDecoder()) {
        self.encoder = encoder
        self.decoder = decoder
    }

    public static let `default` = LarderCoder()

    /// ISO 8601 dates, keys sorted (the same value stores the same bytes),
    /// `/` unescaped.
    public static func defaultEncoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .iso8601
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }

    public static func defaultDecoder() -> JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return d
    }

    /// `value` as JSON bytes; `LarderError.cannotEncode` if it does not encode.
    public func encode<T: Encodable>(_ value: T, key: String) throws -> Data {
        do {
            return try encoder.encode(value)
        } catch {
            throw LarderError.cannotEncode(key: key, type: "\(T.self)", underlying: error)
        }
    }

    /// `data` decoded as `T`; `LarderError.cannotDecode` if it does not decode.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data, key: String) throws -> T {
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw LarderError.cannotDecode(key: key, type: "\(T.self)", underlying: error)
        }
    }
}
