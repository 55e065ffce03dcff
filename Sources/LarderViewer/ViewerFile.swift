import LarderSupport

/// One file of the browser viewer, ready to send.
public struct ViewerFile: Sendable {
    /// Relative to `Public/`, e.g. `index.html`.
    public let path: String
    public let bytes: [UInt8]
    /// From the extension (`MediaType`).
    public let contentType: String
    /// A strong entity tag, quoted: the SHA-256 of the bytes, so it changes
    /// exactly when the file does, across restarts and rebuilds alike.
    public let entityTag: String

    public init(path: String, bytes: [UInt8]) {
        self.path = path
        self.bytes = bytes
        self.contentType = MediaType.forFileName(path)
        self.entityTag = "\"" + String(SHA256.hex(bytes).prefix(32)) + "\""
    }
}
