import LarderModel
import LarderHTTP
import LarderRouting
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// Builds the answer to GET or HEAD of one value: preconditions (RFC 9110
/// 13.2.2), the representation (gzip as stored, or the value), and Range.
/// Watches reuse it: a watch is a GET whose 304 is held back.
struct ValueRepresentation: Sendable {
    let store: any ValueStore
    let logger: Logger

    /// The answer to `head` once the store has opened the value (now, or
    /// later for a store whose reads are round trips).
    struct Answer: StoreAnswer {
        let representation: ValueRepresentation
        let head: HTTPRequestHead
        func response(_ opened: Result<StoredValue, any Error>) throws(HTTPError) -> HTTPResponse {
            try representation.response(opened: opened, head)
        }
    }

    /// The answer for a value `store.open` gave (or failed to give).
    func response(opened: Result<StoredValue, Error>, _ head: HTTPRequestHead) throws(HTTPError) -> HTTPResponse {
        let preconditions = Preconditions.of(head)
        let value: StoredValue
        do {
            value = try opened.get()
        } catch StoreError.notFound {
            if let preconditions, preconditions.evaluate(current: nil, isReadMethod: true) == .failed {
                throw Preconditions.failed
            }
            throw StoreError.notFound.httpError
        } catch {
            throw ErrorMapping.httpError(error, logger: logger)
        }
        let meta = value.metadata
        // A tiny value whose gzip form is no smaller goes out as identity
        // even when gzip is accepted (`Vary` stays: the choice still
        // depends on the header); its ETag, ranges and 304s are identity's.
        let gzip = Self.acceptsGzip(head.headers.values("Accept-Encoding")) && !value.gzipSavesNothing
        let etag = gzip ? value.gzipETag : value.etag
        if let preconditions {
            switch preconditions.evaluate(current: Preconditions.current(meta), isReadMethod: true) {
            case .notModified:
                value.close()
                var headers = [("ETag", etag), ("Last-Modified", HTTPDate.format(secondsSince1970: meta.modifiedSeconds)),
                               ("Vary", "Accept-Encoding"), ("Cache-Control", "no-cache"), ("Larder-Source", value.source.rawValue)]
                if let expires = meta.expiresNanos { headers.append(("Larder-Expires", Self.httpDate(nanos: expires))) }
                return HTTPResponse(status: .notModified, headers: headers)
            case .failed:
                value.close()
                throw Preconditions.failed
            case .proceed:
                break
            }
        }
        var headers: [(String, String)] = []
        let block = Self.headerBlock(value, etag: etag, gzip: gzip)
        let length = gzip ? Int64(value.gzipLength) : Int64(meta.size)

        var start: Int64 = 0
        var count = length
        var status = HTTPStatus.ok
        if head.method == .get, let range = head.headers["Range"], Self.ifRangeAllows(head.headers["If-Range"], etag: etag) {
            switch ByteRangeRequest.evaluate(range, length: length) {
            case .full:
                break
            case .unsatisfiable:
                value.close()
                throw HTTPError(.rangeNotSatisfiable, .rangeNotSatisfiable,
                                "the value has \(length) bytes; the range asks for none of them",
                                headers: [("Content-Range", ByteRangeRequest.unsatisfiedContentRange(length: length))])
            case .partial(let s, let e):
                start = s
                count = e - s + 1
                status = .partialContent
                headers.append(("Content-Range", ByteRangeRequest.contentRange(start: s, end: e, length: length)))
            }
        }
        if head.method == .head {
            // The encoder sends no body for HEAD; the stream only carries the length.
            return HTTPResponse(status: status, headers: headers, headerBlock: block,
                                body: .stream(StoreBodyStream(value.gzipStream()), length: count))
        }
        let body: HTTPResponseBody = try ErrorMapping.run(logger, context: "GET \(meta.key)") { () throws -> HTTPResponseBody in
            // A truncated file is an error before the status line goes out, never a short value.
            do { try value.checkTrailer() } catch { value.close(); throw error }
            if let bytes = gzip ? value.gzipBytes() : try value.identityBytes() {
                value.close()
                return .bytes(start == 0 && count == length ? bytes : Array(bytes[Int(start)..<Int(start + count)]))
            }
            if gzip, let region = value.gzipRegion(start: start, count: count) {
                // The stored bytes as they are, file to socket; the value
                // (and its descriptor) lives until the response is done.
                return .file(HTTPFileRegion(prefix: region.prefix, fd: region.fd, offset: region.offset,
                                            length: region.length, onClose: { value.close() }))
            }
            let stream = gzip ? value.gzipStream() : try value.identityStream()
            do { try stream.skip(start) } catch { stream.close(); throw error }
            return .stream(StoreBodyStream(stream), length: count)
        }
        return HTTPResponse(status: status, headers: headers, headerBlock: block, body: body)
    }

    /// The fields every 200 (or 206) of this representation carries, the
    /// same for every GET of this version of the value: formatted once for a
    /// value served from the cache (kept in its memo), else now.
    static func headerBlock(_ value: StoredValue, etag: String, gzip: Bool) -> HTTPHeaderBlock {
        if let memo = value.cacheMemo {
            if let kept = memo.kept(gzip: gzip) as? KeptHead, kept.source == value.source { return kept.block }
            let block = headerBlock(value.metadata, etag: etag, gzip: gzip, source: value.source)
            memo.keep(KeptHead(source: value.source, block: block), gzip: gzip)
            return block
        }
        return headerBlock(value.metadata, etag: etag, gzip: gzip, source: value.source)
    }

    private static func headerBlock(_ meta: ValueMetadata, etag: String, gzip: Bool, source: ValueSource) -> HTTPHeaderBlock {
        var fields: [(String, String)] = [
            ("Content-Type", meta.contentType),
            ("ETag", etag),
            ("Last-Modified", HTTPDate.format(secondsSince1970: meta.modifiedSeconds)),
            ("Vary", "Accept-Encoding"),
            ("Cache-Control", "no-cache"),
            ("Accept-Ranges", "bytes"),
            ("Larder-Source", source.rawValue),
        ]
        if let expires = meta.expiresNanos { fields.append(("Larder-Expires", httpDate(nanos: expires))) }
        if gzip { fields.append(("Content-Encoding", "gzip")) }
        return HTTPHeaderBlock(fields)
    }

    /// A cached value's formatted head, with the source it was formatted
    /// for (the same file may be served as a fixture and as a value).
    private final class KeptHead: Sendable {
        let source: ValueSource
        let block: HTTPHeaderBlock
        init(source: ValueSource, block: HTTPHeaderBlock) {
            self.source = source
            self.block = block
        }
    }

    /// `If-Range` with the representation's strong ETag. A date never
    /// counts: two writes within one second share a Last-Modified, which is
    /// therefore not a strong validator (RFC 9110 13.1.5), and a range of one
    /// value spliced onto another is worse than sending the whole value.
    static func ifRangeAllows(_ ifRange: String?, etag: String) -> Bool {
        guard let ifRange else { return true }
        let text = ifRange.trimmingSpaces
        guard text.hasPrefix("\"") else { return false }
        return ByteRangeRequest.ifRangeAllows(text, currentETags: [etag], lastModified: 0)
    }

    /// An expiry as an HTTP date, rounded up: the value is gone by then.
    static func httpDate(nanos: Int64) -> String {
        // Without adding first: an expiry near Int64.max (from a snapshot) must not overflow.
        HTTPDate.format(secondsSince1970: nanos / 1_000_000_000 + (nanos % 1_000_000_000 > 0 ? 1 : 0))
    }

    /// Whether `Accept-Encoding` allows gzip (a `gzip`, `x-gzip` or `*`
    /// coding with a q-value above 0).
    static func acceptsGzip(_ values: [String]) -> Bool {
        for value in values {
            for item in value.split(separator: ",") {
                let parts = item.split(separator: ";").map { $0.trimmingSpaces.lowercased() }
                guard let coding = parts.first, coding == "gzip" || coding == "x-gzip" || coding == "*" else { continue }
                let q = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
                if q > 0 { return true }
            }
        }
        return false
    }
}

/// RFC 9110 preconditions as the store's write condition, and for reads.
enum Preconditions {
    static let failed = HTTPError(.preconditionFailed, .preconditionFailed,
                                  "a precondition (If-Match, If-None-Match, If-Unmodified-Since) does not hold for the current value")

    /// The request's preconditions; nil when it has none (the common case, free).
    static func of(_ head: HTTPRequestHead) -> HTTPPreconditions? { HTTPPreconditions.of(head) }

    /// Both tags of a version answer: identity and gzip (docs/http-api.md).
    static func current(_ meta: ValueMetadata) -> CurrentRepresentation {
        CurrentRepresentation(etags: [meta.etag, meta.gzipETag], lastModified: meta.modifiedSeconds)
    }

    /// A check the store runs under the key's barrier, atomically with the write.
    static func writeCondition(_ head: HTTPRequestHead) -> WriteCondition? {
        guard let p = of(head) else { return nil }
        return { meta in
            if p.evaluate(current: meta.map(current), isReadMethod: false) != .proceed { throw failed }
        }
    }

    /// A write that must create: the key is absent (or expired). The
    /// store-level check, shared with the embedded API.
    static let mustNotExist: WriteCondition = WriteConditions.mustNotExist
}
