import Crypto
import LarderSupport

/// One file of the browser viewer, ready to send.
package struct ViewerFile: Sendable {
    /// Relative to `Public/`, e.g. `index.html`.
    package let path: String
    package let bytes: [UInt8]
    /// From the extension (`MediaType`).
    package let contentType: String
    /// A strong entity tag, quoted: the SHA-256 of the bytes, so it changes
    /// exactly when the file does, across restarts and rebuilds alike.
    package let entityTag: String

    package init(path: String, bytes: [UInt8]) {
        self.path = path
        self.bytes = bytes
        self.contentType = MediaType.forFileName(path)
        // 128 of the digest's bits, as 32 hex digits: plenty to tell two
        // versions of one file apart, and a shorter header.
        let hex = SHA256.hash(data: bytes).prefix(16).map { byte in
            (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
        self.entityTag = "\"" + hex + "\""
    }
}
