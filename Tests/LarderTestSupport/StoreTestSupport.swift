import CZlib
import Foundation
import LarderModel
import LarderWire
import LarderDiskStore
import LarderStorage
import LarderValueFile
import Testing
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

// Helpers shared by the Store*Tests suites: raw requests, gzip with the
// system zlib (not the store's code), external gzip tools, a cheap PRNG,
// threads, and looking at the data directory.

package enum StoreTestSupport {
    // MARK: - Requests

    /// Percent-encodes every byte of `key` outside `A-Za-z0-9-._~` (keeps `/`).
    /// Works on the UTF-8 bytes, so NFC and NFD spellings stay distinct.
    package static func encode(_ key: String) -> String { encode(bytes: Array(key.utf8)) }

    package static func encode(bytes: [UInt8]) -> String { StoreKey.percentEncode(bytes: bytes) }

    /// PUT at the raw target `/store/<encodedPath>`.
    @discardableResult
    package static func put(_ client: WireClient, key: String, _ body: [UInt8], contentType: String? = nil,
                    headers: [(String, String)] = []) throws -> ClientResponse {
        var all = headers
        if let contentType { all.append(("Content-Type", contentType)) }
        return try client.send("PUT", "/store/" + encode(key), headers: all, body: body)
    }

    package static func get(_ client: WireClient, key: String, headers: [(String, String)] = []) throws -> ClientResponse {
        try client.send("GET", "/store/" + encode(key), headers: headers)
    }

    package static func delete(_ client: WireClient, key: String) throws -> ClientResponse {
        try client.send("DELETE", "/store/" + encode(key))
    }

    /// The body as a JSON object, or a test failure.
    package static func json(_ response: ClientResponse, sourceLocation: SourceLocation = #_sourceLocation) -> [String: Any] {
        guard let object = response.json else {
            Issue.record("not a JSON object (status \(response.status)): \(response.text)", sourceLocation: sourceLocation)
            return [:]
        }
        return object
    }

    /// Checks a JSON error answer: status, content type and `error` code.
    package static func expectError(_ response: ClientResponse, status: Int, code: String,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        ProtocolWire.expectError(response, status, code, sourceLocation: sourceLocation)
    }

    /// Every key of a listing, paging with `after` until `next` is null.
    package static func listAll(_ client: WireClient, prefix: String = "", limit: Int? = nil,
                        delimiter: Bool = false) throws -> (keys: [String], prefixes: [String], pages: Int) {
        var keys: [String] = []
        var prefixes: [String] = []
        var after: String? = nil
        var pages = 0
        while true {
            var query: [String] = []
            if let limit { query.append("limit=\(limit)") }
            if delimiter { query.append("delimiter=/") }
            if let after { query.append("after=" + encodeQuery(after)) }
            let response = try client.send("GET", "/store/" + encode(prefix) + (query.isEmpty ? "" : "?" + query.joined(separator: "&")))
            // The model's own type, so a listing that lacks a member or
            // mistypes one fails here instead of reading as "no keys".
            guard response.status == 200, let page = try? ModelJSON.decode(ListingPage.self, from: Data(response.body)) else {
                throw ClientError("listing failed: \(response.status) \(response.text)")
            }
            pages += 1
            keys += page.keys.map(\.key)
            prefixes += page.prefixes
            guard let next = page.next else { break }
            after = next
            if pages > 100_000 { throw ClientError("listing does not end") }
        }
        return (keys, prefixes, pages)
    }

    package static func encodeQuery(_ text: String) -> String {
        encode(text).replacingOccurrences(of: "/", with: "%2F")
    }

    /// Sorts by UTF-8 bytes (Swift's `<` on String is not byte order).
    package static func byteSorted(_ keys: [String]) -> [String] {
        keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    package static func bytes(_ keys: [String]) -> [[UInt8]] { keys.map { Array($0.utf8) } }

    /// Same keys, same UTF-8 bytes, same order; a short message when not.
    package static func expectKeys(_ got: [String], _ want: [String], _ note: String = "",
                           sourceLocation: SourceLocation = #_sourceLocation) {
        let g = bytes(got), w = bytes(want)
        guard g != w else { return }
        func short(_ k: String) -> String { k.utf8.count > 24 ? "\(k.prefix(12))…\(k.suffix(6))(\(k.utf8.count)B)" : k.debugDescription }
        let firstDiff = (0..<min(g.count, w.count)).first { g[$0] != w[$0] } ?? min(g.count, w.count)
        let gotAt = firstDiff < got.count ? short(got[firstDiff]) : "end"
        let wantAt = firstDiff < want.count ? short(want[firstDiff]) : "end"
        Issue.record("\(note) keys differ: got \(got.count), want \(want.count); first difference at #\(firstDiff): got \(gotAt), want \(wantAt)",
                     sourceLocation: sourceLocation)
    }

    // MARK: - Data

    package static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 } }
    }

    // MARK: - gzip with the system zlib

    /// A gzip member of `data`, made by zlib's own gzip wrapper. With
    /// `name`/`comment`/`extra`/`headerCRC` the header carries those fields.
    package static func gzip(_ data: [UInt8], level: Int32 = 6, name: String? = nil, comment: String? = nil,
                     extra: [UInt8]? = nil, headerCRC: Bool = false, mtime: UInt = 0) -> [UInt8] {
        var stream = z_stream()
        var rc = deflateInit2_(&stream, level, Z_DEFLATED, MAX_WBITS + 16, 8, Z_DEFAULT_STRATEGY,
                               ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        precondition(rc == Z_OK)
        defer { deflateEnd(&stream) }
        // zlib keeps pointers to the header fields until deflate ends.
        func cString(_ text: String?) -> UnsafeMutablePointer<Bytef>? {
            guard let text else { return nil }
            let bytes = Array(text.utf8) + [0]
            let p = UnsafeMutablePointer<Bytef>.allocate(capacity: bytes.count)
            p.initialize(from: bytes, count: bytes.count)
            return p
        }
        let namePointer = cString(name), commentPointer = cString(comment)
        let extraPointer: UnsafeMutablePointer<Bytef>? = extra.map { e in
            let p = UnsafeMutablePointer<Bytef>.allocate(capacity: max(1, e.count))
            p.initialize(from: e, count: e.count)
            return p
        }
        defer { namePointer?.deallocate(); commentPointer?.deallocate(); extraPointer?.deallocate() }
        var header = gz_header()
        if name != nil || comment != nil || extra != nil || headerCRC || mtime != 0 {
            header.time = uLong(mtime)
            header.os = 3
            header.name = namePointer
            header.comment = commentPointer
            header.extra = extraPointer
            header.extra_len = uInt(extra?.count ?? 0)
            header.hcrc = headerCRC ? 1 : 0
            rc = deflateSetHeader(&stream, &header)
            precondition(rc == Z_OK)
        }
        var out = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(data.count))) + 1024)
        let produced: Int = out.withUnsafeMutableBytes { o in
            data.withUnsafeBytes { i in
                stream.next_in = UnsafeMutablePointer(mutating: i.baseAddress?.assumingMemoryBound(to: Bytef.self))
                stream.avail_in = uInt(i.count)
                stream.next_out = o.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(o.count)
                rc = deflate(&stream, Z_FINISH)
                precondition(rc == Z_STREAM_END, "deflate returned \(rc)")
                return o.count - Int(stream.avail_out)
            }
        }
        return Array(out[0..<produced])
    }

    /// Decompresses every member of a gzip stream with zlib; nil if invalid.
    package static func gunzip(_ data: [UInt8]) -> [UInt8]? {
        var result: [UInt8] = []
        var offset = 0
        var members = 0
        while offset < data.count || members == 0 {
            var stream = z_stream()
            guard inflateInit2_(&stream, MAX_WBITS + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
            defer { inflateEnd(&stream) }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            var ended = false
            let ok: Bool = data.withUnsafeBytes { input in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.advanced(by: offset).assumingMemoryBound(to: Bytef.self))
                stream.avail_in = uInt(input.count - offset)
                while true {
                    let (rc, n): (Int32, Int) = chunk.withUnsafeMutableBytes { o in
                        stream.next_out = o.baseAddress!.assumingMemoryBound(to: Bytef.self)
                        stream.avail_out = uInt(o.count)
                        let rc = inflate(&stream, Z_NO_FLUSH)
                        return (rc, o.count - Int(stream.avail_out))
                    }
                    result.append(contentsOf: chunk[0..<n])
                    if rc == Z_STREAM_END { ended = true; return true }
                    if rc != Z_OK { return false }
                    if n == 0 && stream.avail_in == 0 { return false }
                }
            }
            guard ok, ended else { return nil }
            offset = data.count - Int(stream.avail_in)
            members += 1
        }
        return result
    }

    // MARK: - Processes

    /// Runs a program; returns its exit status and standard output.
    package static func run(_ path: String, _ arguments: [String], stdin: [UInt8]? = nil) throws -> (status: Int32, output: [UInt8], error: String) {
        let result = try ProcessRunner.run(path, arguments, stdin: stdin)
        return (result.status, result.stdout, result.stderr)
    }

    package static let gzipTool = FileManager.default.isExecutableFile(atPath: "/bin/gzip") ? "/bin/gzip" : "/usr/bin/gzip"
    package static let zcatTool = FileManager.default.isExecutableFile(atPath: "/bin/zcat") ? "/bin/zcat" : "/usr/bin/zcat"

    // MARK: - The data directory

    /// Paths (relative to `root`) of every regular file below it, following
    /// no symlinks; `root` itself may be a symlink.
    package static func regularFiles(under root: String) -> [String] {
        var found: [String] = []
        func walk(_ relative: String) {
            let path = relative.isEmpty ? root : root + "/" + relative
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
            for name in names {
                let child = relative.isEmpty ? name : relative + "/" + name
                var st = stat()
                guard lstat(root + "/" + child, &st) == 0 else { continue }
                if (st.st_mode & S_IFMT) == S_IFDIR { walk(child) }
                else if (st.st_mode & S_IFMT) == S_IFREG { found.append(child) }
            }
        }
        walk("")
        return found
    }

    /// Every value file under `<data>/values` (skipping the `\name` files of hashed directories).
    package static func valueFiles(_ dataDirectory: String) -> [String] {
        regularFiles(under: dataDirectory + "/values").filter { !$0.hasSuffix("\\name") }
    }

    /// On-disk path of a key below `values/` for segments shorter than 255 bytes.
    package static func diskPath(_ key: String) -> String {
        let segments = key.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        return (segments.dropLast().map { $0 + "\\" } + [segments.last!]).joined(separator: "/")
    }

    package static func readFile(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map(Array.init)
    }

    /// Runs `body(i)` for i in 0..<count on `count` threads at once; returns their errors.
    package static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) -> [String] {
        let errors = ErrorBox()
        let start = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for i in 0..<count {
            group.enter()
            Thread.detachNewThread {
                start.wait()
                do { try body(i) } catch { errors.add("thread \(i): \(error)") }
                group.leave()
            }
        }
        for _ in 0..<count { start.signal() }
        group.wait()
        return errors.all
    }

    package final class ErrorBox: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [String] = []
        func add(_ s: String) { lock.lock(); items.append(s); lock.unlock() }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return items }
    }
}

/// Thrown by helpers when a step that is not under test fails.
package struct StoreTestFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ d: String) { description = d }
}
