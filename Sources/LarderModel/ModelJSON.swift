import FoundationEssentials

/// The one JSON coding of the model's wire types, for the server that
/// encodes them (`OrderedJSONEncoder`: members in declaration order, as
/// docs/http-api.md shows them) and the clients that decode them (Foundation).
public enum ModelJSON {
    private static let encoder = OrderedJSONEncoder()
    /// JSONDecoder is Sendable: one serves every thread.
    private static let decoder = JSONDecoder()

    public static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        do {
            return try encoder.encode(value)
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
