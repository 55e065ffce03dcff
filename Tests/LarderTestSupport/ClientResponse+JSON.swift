import Foundation
import LarderWire

extension ClientResponse {
    /// The body parsed as a JSON object (nil if it is not one). Here, not in
    /// LarderWire: `JSONSerialization` is Foundation's, which the server's
    /// targets (FoundationEssentials only) do not link.
    public var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }
}
