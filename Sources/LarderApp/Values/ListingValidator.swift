import LarderHTTP
import LarderRouting
import LarderStorage
import LarderValueFile

/// The validator of a listing page: a strong ETag computed from the page's
/// JSON bytes, so two answers with one tag are byte for byte the same (the
/// entries carry each value's etag, size and times, so any write under the
/// page changes it). A listing is `Cache-Control: no-cache`: a cache keeps
/// it but asks again each time, and `If-None-Match` with the tag gets a 304
/// with no body. The page is still read from the store to answer (the tag
/// is of the page as it is now): what a 304 saves is the transfer.
enum ListingValidator {
    /// `"l-"` and 128 bits of two FNV-1a passes over the page, as hex.
    static func etag(_ page: [UInt8]) -> String {
        var a: UInt64 = 0xcbf2_9ce4_8422_2325
        var b: UInt64 = 0x8422_2325_cbf2_9ce4
        for byte in page {
            a = (a ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            b = (b ^ UInt64(byte ^ 0x5A)) &* 0x0000_0100_0000_01b3
        }
        return "\"l-" + VersionHex.hex(a) + VersionHex.hex(b) + "\""
    }

    /// The answer for `page`: 200 with it, or 304 when `If-None-Match`
    /// names its tag (weak comparison, RFC 9110 section 13.1.2) or is `*`.
    static func response(_ page: [UInt8], ifNoneMatch: [String]) -> HTTPResponse {
        let tag = etag(page)
        let headers = [("ETag", tag), ("Cache-Control", "no-cache")]
        if IfNoneMatch.matches(tag, ifNoneMatch) { return HTTPResponse(status: .notModified, headers: headers) }
        return .json(.ok, bytes: page, headers: headers)
    }
}
