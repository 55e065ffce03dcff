import LarderHTTP
import LarderValueFile

/// The answer to GetObject or HeadObject of an open value: its
/// conditions (`If-Match`, `If-None-Match`, `If-Modified-Since`,
/// `If-Unmodified-Since`), the object's bytes as stored (never gzip-encoded
/// on the wire: S3 clients do not ask for it), a `Range`, S3's headers
/// (those kept with the object, `response-*` overrides, the checksum when
/// `x-amz-checksum-mode: ENABLED` asks for it on a whole object).
enum ObjectRepresentation {
    /// The `response-*` query parameters of a GetObject, and the header each overrides.
    static let overrides = [
        ("response-content-type", "Content-Type"), ("response-content-language", "Content-Language"),
        ("response-expires", "Expires"), ("response-cache-control", "Cache-Control"),
        ("response-content-disposition", "Content-Disposition"), ("response-content-encoding", "Content-Encoding"),
    ]

    static func response(_ value: StoredValue, _ head: HTTPRequestHead) throws -> HTTPResponse {
        let meta = value.metadata
        let length = Int64(meta.size)
        let attributes = meta.s3Attributes  // decoded once
        // The part asked for is checked first: a part past the last is InvalidPart whatever the key.
        let query = head.query == nil ? nil : S3Query(head.query)
        let part: (start: Int64, count: Int64, digest: [UInt8]?)?
        do { part = try query?["partNumber"].map { try Self.part($0, of: attributes, length: length, head) } } catch { value.close(); throw error }
        do { try ServerSideEncryption.checkRead(head.headers, kept: attributes?.headers ?? []) } catch { value.close(); throw error }
        let etag = attributes?.etag ?? meta.etag
        let lastModified = HTTPDate.format(secondsSince1970: meta.modifiedSeconds)
        var headers: [(String, String)] = [("Content-Type", meta.contentType), ("Last-Modified", lastModified), ("Accept-Ranges", "bytes")]
        let wantsChecksum = head.headers["x-amz-checksum-mode"]?.uppercased() == "ENABLED" && head.headers["Range"] == nil
        headers += attributes?.responseHeaders(checksumMode: wantsChecksum && part == nil, etag: etag) ?? [("ETag", etag)]
        if let part, let attributes, attributes.parts > 0 {
            headers.append(("x-amz-mp-parts-count", String(attributes.parts)))
            if wantsChecksum, let algorithm = attributes.checksum?.algorithm, let digest = part.digest {
                headers.append((algorithm.header, digest.base64))
                headers.append(("x-amz-checksum-type", attributes.checksumType.rawValue))
            }
        }
        if let query {
            for (parameter, header) in overrides {
                guard let value = query[parameter] else { continue }
                headers.removeAll { $0.0 == header }
                headers.append((header, value))
            }
        }
        if let preconditions = ObjectConditions.of(head) {
            switch preconditions.evaluate(current: ObjectConditions.current(meta), isReadMethod: true) {
            case .notModified:
                value.close()
                return HTTPResponse(status: .notModified, headers: [("ETag", etag), ("Last-Modified", lastModified)])
            case .failed:
                value.close()
                throw S3Error.preconditionFailed
            case .proceed:
                break
            }
        }
        var (start, count, status) = (Int64(0), length, HTTPStatus.ok)
        if let part, attributes?.parts ?? 0 > 0 {
            (start, count, status) = (part.start, part.count, .partialContent)
            headers.append(("Content-Range", ByteRangeRequest.contentRange(start: part.start, end: part.start + part.count - 1, length: length)))
        } else if let range = head.headers["Range"] {
            switch ByteRangeRequest.evaluate(range, length: length) {
            case .full:
                break
            case .unsatisfiable:
                value.close()
                throw S3Error.invalidRange(length: length)
            case .partial(let s, let e):
                (start, count, status) = (s, e - s + 1, .partialContent)
                headers.append(("Content-Range", ByteRangeRequest.contentRange(start: s, end: e, length: length)))
            }
        }
        if head.method == .head {
            // No body goes out for HEAD; the stream carries the length (and closes the value).
            return HTTPResponse(status: status, headers: headers, body: .stream(ValueBodyStream(value.gzipStream()), length: count))
        }
        // A truncated file is an error before the status line goes out, never a short object.
        do { try value.checkTrailer() } catch { value.close(); throw error }
        let small: [UInt8]?
        do { small = try value.identityBytes() } catch { value.close(); throw error }
        if let bytes = small {
            value.close()
            return HTTPResponse(status: status, headers: headers,
                                body: .bytes(count == length ? bytes : Array(bytes[Int(start)..<Int(start + count)])))
        }
        let stream: ValueByteStream
        do { stream = try value.identityStream() } catch { value.close(); throw error }
        do { try stream.skip(start) } catch { stream.close(); throw error }
        return HTTPResponse(status: status, headers: headers, body: .stream(ValueBodyStream(stream), length: count))
    }
}

extension ObjectRepresentation {
    /// The bytes `partNumber` names: a multipart object's part (its
    /// offset, size and checksum, as Complete kept them), or the whole of
    /// any other object as its part 1; `InvalidPart` past the last part.
    static func part(_ text: String, of attributes: ObjectAttributes?, length: Int64,
                     _ head: HTTPRequestHead) throws(S3Error) -> (start: Int64, count: Int64, digest: [UInt8]?) {
        guard let number = Int(text), MultipartLayout.partNumbers.contains(number) else {
            throw S3Error.invalidArgument("Part number must be an integer between 1 and 10000, inclusive")
        }
        guard head.headers["Range"] == nil else {
            throw S3Error.invalidRequest("Cannot specify both Range header and partNumber query parameter")
        }
        let count = Int(attributes?.parts ?? 0)
        guard number <= max(count, 1) else { throw S3Error.invalidPart("The requested partnumber is not satisfiable") }
        guard count > 0 else { return (0, length, nil) }
        guard let sizes = attributes?.partSizes, sizes.count == count else {
            throw S3Error.invalidRequest("Larder did not keep this object's part sizes (it was completed before it kept them, "
                                         + "or has too many parts): read it by Range")
        }
        let start = sizes.prefix(number - 1).reduce(0, +)
        return (Int64(start), Int64(sizes[number - 1]), attributes?.partDigests?[number - 1])
    }
}

/// The store's byte stream as the HTTP layer's (the two know nothing of each other).
final class ValueBodyStream: HTTPBodyStream {
    private let base: ValueByteStream
    init(_ base: ValueByteStream) { self.base = base }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { try base.read(into: buffer) }
    func close() { base.close() }
}
