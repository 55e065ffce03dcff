/// `GET /ns/`: `{"namespaces":[{"name":"w3","keys":12,"bytes":3456}]}`,
/// every namespace but the default one, by name.
public struct NamespaceList: Codable, Sendable, Hashable {
    /// One namespace: its values (fixtures not counted) and their bytes.
    public struct Entry: Codable, Sendable, Hashable {
        public var name: String
        public var keys: Int
        public var bytes: Int64
        public init(name: String, keys: Int, bytes: Int64) {
            self.name = name
            self.keys = keys
            self.bytes = bytes
        }
    }

    public var namespaces: [Entry]
    public init(namespaces: [Entry]) { self.namespaces = namespaces }
}
