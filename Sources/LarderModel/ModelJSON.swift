import Foundation

/// The one JSON configuration of the model's wire types, for the server that
/// encodes them and the clients that decode them: keys sorted (the same
/// bytes every time), `/` unescaped (keys are paths).
public enum ModelJSON {
    /// Encoding is stateless once configured, so one encoder serves every thread.
    nonisolated(unsafe) private static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()
    nonisolated(unsafe) private static let decoder = JSONDecoder()

    public static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        do {
            return Array(try encoder.encode(value))
        } catch {
            // The model's types hold strings and integers only.
            preconditionFailure("a model type failed to encode: \(error)")
        }
    }

    public static func encodeData<T: Encodable>(_ value: T) -> Data {
        Data(encode(value))
    }

    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decoder.decode(type, from: data)
    }
}
