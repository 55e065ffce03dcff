import LarderHTTP

/// Drives the request parser and the body decoder over arbitrary bytes the
/// way the session does (`HTTP1ConnectionState`), and checks what must hold for any input.
///
/// Shared by the libFuzzer target (`Fuzz/HTTPParserFuzz`, built by
/// Fuzz/build.sh) and by the Swift Testing suite that replays the seed
/// corpus (`ParserCorpusTests`), so both check the same invariants. Its own
/// module, outside every product: it reaches the parser through LarderHTTP's
/// `package` declarations.
///
/// The model of the session: bytes arrive in pieces and are appended to the
/// unread input; after each piece the parser is called on all unread bytes
/// until it wants more (`.incomplete`); a complete head starts its body (the
/// limit chosen as `begin` chooses it), the body decoder is fed the unread
/// bytes until it is done, then the next pipelined head is parsed. A failure
/// ends the connection, as the session closes after answering it.
///
/// Invariants (each violation is a "problem" string):
/// - the same bytes in one piece, in random pieces and byte by byte give the
///   same events (heads, bodies, failure status, what is left pending);
/// - `skip`/`consumed`/`used` counts stay inside the buffer; `.incomplete`
///   never happens on a full input buffer (the session would have to 431);
/// - a decoded body never exceeds its limit, a fixed body is exactly its
///   Content-Length, a chunked body never exceeds the declared chunk sizes;
/// - an accepted head is unambiguous: not both Content-Length and
///   Transfer-Encoding, one Host in HTTP/1.1, a target without controls or
///   spaces, header names that are tokens, values without CR/LF/NUL;
/// - the field parsers (Range, entity tags and If-Match lists, HTTP dates,
///   preconditions, target redaction) return a value within bounds and
///   round-trip what they format.
/// A crash, a trap (overflow, out-of-bounds index) or a hang is found by the
/// fuzzer itself; `check` only returns problems it can describe.
package enum ParserFuzzHarness {
    /// The limits a run uses: the server's configuration and the limit a
    /// route asks for its own body (`HTTPRequestHandler.maxBodyBytes(for:)`).
    package struct Limits: Sendable, CustomStringConvertible {
        var maxRequestLineBytes: Int
        var maxHeaderBytes: Int
        var maxBodyBytes: Int64
        /// The path of a route with no body limit of its own (`/snapshot`:
        /// SnapshotRoute answers `.max`), asked as `HTTP1ConnectionState.begin` asks
        /// for chunked bodies and bodies over `maxBodyBytes`.
        var unlimitedPath: String?

        var configuration: HTTPServerConfiguration {
            var c = HTTPServerConfiguration()
            c.maxRequestLineBytes = maxRequestLineBytes
            c.maxHeaderBytes = maxHeaderBytes
            c.maxBodyBytes = maxBodyBytes
            return c
        }

        /// The channel's input buffer (`HTTP1Session` sizes it so; the
        /// channel never allocates less than 64 KiB).
        var inputCapacity: Int { max(64 * 1024, maxRequestLineBytes + maxHeaderBytes + 4096) }

        /// The defaults of `larder serve`, with its unlimited route.
        package static let production = Limits(maxRequestLineBytes: 8 * 1024, maxHeaderBytes: 32 * 1024,
                                       maxBodyBytes: 1 << 30, unlimitedPath: "/snapshot")
        /// Small enough that short inputs reach every limit.
        package static let tiny = Limits(maxRequestLineBytes: 64, maxHeaderBytes: 256, maxBodyBytes: 100, unlimitedPath: nil)

        package var description: String {
            "line \(maxRequestLineBytes), header \(maxHeaderBytes), body \(maxBodyBytes), unlimited \(unlimitedPath ?? "-")"
        }
    }

    /// What the session would see, in order.
    package enum Event: Equatable, CustomStringConvertible {
        /// A complete head, summarised.
        case head(String)
        /// The whole body of the request before.
        case body([UInt8])
        /// The answer to a broken request; the connection ends.
        case failure(Int)
        /// Input ended while a head was incomplete: how many bytes wait.
        case awaitingHead(unread: Int)
        /// Input ended inside a body: what was decoded so far.
        case awaitingBody([UInt8])

        package var description: String {
            switch self {
            case .head(let s): "head(\(s))"
            case .body(let b): "body(\(b.count) bytes: \(String(decoding: b.prefix(40), as: UTF8.self).debugDescription))"
            case .failure(let status): "failure(\(status))"
            case .awaitingHead(let n): "awaitingHead(\(n))"
            case .awaitingBody(let b): "awaitingBody(\(b.count) bytes)"
            }
        }
    }

    package struct Run {
        package var events: [Event] = []
        var problems: [String] = []
        /// The heads accepted, for the field parsers.
        var heads: [HTTPRequestHead] = []
    }

    // MARK: - Entry points

    /// Every check for one input: both limit sets, each in one piece, in
    /// pieces chosen from the input's own hash, and byte by byte (short
    /// inputs). Returns the problems found (empty: all invariants hold).
    package static func check(_ input: [UInt8]) -> [String] {
        var problems: [String] = []
        var seed = fnv1a(input)
        for limits in [Limits.production, Limits.tiny] {
            let whole = run(input, pieces: [input.count], limits: limits)
            problems += whole.problems.map { "[\(limits), one piece] \($0)" }
            var splits: [(String, [Int])] = [("random pieces", randomPieces(count: input.count, seed: &seed))]
            if input.count <= 2048 { splits.append(("byte by byte", Array(repeating: 1, count: input.count))) }
            for (name, pieces) in splits {
                let split = run(input, pieces: pieces, limits: limits)
                problems += split.problems.map { "[\(limits), \(name)] \($0)" }
                if split.events != whole.events {
                    problems.append("[\(limits)] \(name) \(pieces.prefix(20)) gives \(split.events) but one piece gives \(whole.events)")
                }
            }
            for head in whole.heads {
                for (name, value) in head.headers {
                    problems += checkFieldValue(value).map { "[header \(name)] \($0)" }
                }
                problems += checkTarget(head.target)
            }
        }
        // The field parsers on every line of the raw input too, so they are
        // reached without a valid head around them: the value after the
        // first colon, and the whole line.
        var lines = 0
        for line in input.split(separator: 0x0A, omittingEmptySubsequences: true) where lines < 64 {
            lines += 1
            var text = line
            if text.last == 0x0D { text = text.dropLast() }
            if let colon = text.firstIndex(of: 0x3A) {
                problems += checkFieldValue(String(decoding: text[(colon + 1)...], as: UTF8.self))
            }
            problems += checkFieldValue(String(decoding: text, as: UTF8.self))
        }
        return problems
    }

    /// Feeds `input` in pieces of the given sizes (a last piece takes what
    /// they leave) to a parser and body decoder as the session does.
    package static func run(_ input: [UInt8], pieces: [Int], limits: Limits) -> Run {
        var session = SessionModel(limits: limits)
        var offset = 0
        for size in pieces where offset < input.count && !session.ended {
            let end = min(input.count, offset + max(1, size))
            session.receive(input[offset..<end])
            offset = end
        }
        if offset < input.count && !session.ended { session.receive(input[offset...]) }
        session.finish()
        return session.result
    }

    // MARK: - The session model

    private struct SessionModel {
        let limits: Limits
        var parser: HTTPRequestParser
        var unread: [UInt8] = []
        var result = Run()
        var ended = false

        private enum Phase {
            case head
            case body(BodyDecoder, received: [UInt8], declared: Int64?, limit: Int64)
        }
        private var phase = Phase.head

        init(limits: Limits) {
            self.limits = limits
            parser = HTTPRequestParser(configuration: limits.configuration)
        }

        mutating func problem(_ text: String) { result.problems.append(text) }

        mutating func receive(_ bytes: ArraySlice<UInt8>) {
            unread += bytes
            while !ended && !unread.isEmpty {
                switch phase {
                case .head:
                    guard parseHead() else { return }
                case .body:
                    guard feedBody() else { return }
                }
            }
        }

        mutating func finish() {
            guard !ended else { return }
            switch phase {
            case .head: result.events.append(.awaitingHead(unread: unread.count))
            case .body(_, let received, _, _): result.events.append(.awaitingBody(received))
            }
        }

        /// One parser call; false when it needs more input.
        private mutating func parseHead() -> Bool {
            let count = unread.count
            switch unread.withUnsafeBytes({ parser.parse($0) }) {
            case .incomplete:
                if count >= limits.inputCapacity {
                    problem("incomplete with \(count) unread bytes, a full input buffer of \(limits.inputCapacity)")
                }
                return false
            case .skip(let n):
                guard n > 0, n <= count else {
                    problem("skip(\(n)) of \(count) unread bytes")
                    ended = true
                    return false
                }
                if unread[..<n].contains(where: { $0 != 0x0D && $0 != 0x0A }) { problem("skip(\(n)) skipped more than empty lines") }
                unread.removeFirst(n)
                return true
            case .failure(let error):
                if !error.closeConnection { problem("a head failure (\(error)) keeps the connection") }
                if !(400...599).contains(error.status.code) { problem("a head failure has status \(error.status.code)") }
                result.events.append(.failure(error.status.code))
                ended = true
                return false
            case .complete(let head, let consumed):
                guard consumed > 0, consumed <= count else {
                    problem("consumed \(consumed) of \(count) unread bytes")
                    ended = true
                    return false
                }
                let headBytes = Array(unread[..<consumed])
                unread.removeFirst(consumed)
                checkHead(head, bytes: headBytes)
                result.heads.append(head)
                result.events.append(.head(summary(head)))
                begin(head)
                return true
            }
        }

        /// Chooses the body limit and framing as `HTTP1ConnectionState.begin`
        /// and `handled` do for a route that reads every body.
        private mutating func begin(_ head: HTTPRequestHead) {
            var limit = limits.maxBodyBytes
            if head.isChunked || (head.contentLength ?? 0) > limit, limits.unlimitedPath.map({ head.path == $0 }) == true { limit = .max }
            if let length = head.contentLength, length > limit {
                result.events.append(.failure(413))
                ended = true
                return
            }
            guard head.hasBody else { return }
            let decoder = head.isChunked
                ? BodyDecoder(chunkedWithMaxBytes: limit, maxTrailerBytes: limits.maxHeaderBytes)
                : BodyDecoder(contentLength: head.contentLength ?? 0, maxBytes: limit)
            phase = .body(decoder, received: [], declared: head.isChunked ? nil : head.contentLength, limit: limit)
        }

        /// One decoder call; false when it needs more input.
        private mutating func feedBody() -> Bool {
            guard case .body(var decoder, var received, let declared, let limit) = phase else { return false }
            let count = unread.count
            do {
                let used = try unread.withUnsafeBytes { buffer in
                    try decoder.decode(buffer) { chunk in received += chunk }
                }
                guard used >= 0, used <= count else {
                    problem("the decoder used \(used) of \(count) bytes")
                    ended = true
                    return false
                }
                if !decoder.isDone && used != count { problem("the decoder stopped at \(used) of \(count) bytes before the body ended") }
                if Int64(received.count) > limit { problem("a body of \(received.count) bytes passed its limit \(limit)") }
                if let declared, Int64(received.count) > declared {
                    problem("a body of \(received.count) bytes passed its Content-Length \(declared)")
                }
                if declared == nil, Int64(received.count) > decoder.received {
                    problem("a chunked body of \(received.count) bytes passed its declared chunk sizes \(decoder.received)")
                }
                unread.removeFirst(used)
                if decoder.isDone {
                    if let declared, Int64(received.count) != declared {
                        problem("a finished body of \(received.count) bytes is not its Content-Length \(declared)")
                    }
                    if declared == nil, Int64(received.count) != decoder.received {
                        problem("a finished chunked body of \(received.count) bytes is not its chunk sizes \(decoder.received)")
                    }
                    result.events.append(.body(received))
                    phase = .head
                    return true
                }
                phase = .body(decoder, received: received, declared: declared, limit: limit)
                return false
            } catch let error as HTTPError {
                if !error.closeConnection { problem("a body failure (\(error)) keeps the connection") }
                if Int64(received.count) > limit { problem("a failed body of \(received.count) bytes passed its limit \(limit)") }
                result.events.append(.failure(error.status.code))
                ended = true
                return false
            } catch {
                problem("the decoder threw \(error), not an HTTPError")
                ended = true
                return false
            }
        }

        /// What an accepted head must never be.
        private mutating func checkHead(_ head: HTTPRequestHead, bytes: [UInt8]) {
            let config = limits.configuration
            if bytes.count > config.maxRequestLineBytes + config.maxHeaderBytes + 4 {
                problem("a head of \(bytes.count) bytes passed the limits")
            }
            let h = head.headers
            if h.contains("content-length") && h.contains("transfer-encoding") {
                problem("accepted both Content-Length and Transfer-Encoding")
            }
            if head.isChunked && head.contentLength != nil { problem("chunked with a Content-Length") }
            if head.isChunked && !h.contains("transfer-encoding") { problem("chunked without Transfer-Encoding") }
            if let n = head.contentLength, n < 0 { problem("a negative Content-Length \(n)") }
            if head.contentLength != nil && !h.contains("content-length") { problem("a length without Content-Length") }
            if head.version == .http11 && h.values("host").count != 1 { problem("HTTP/1.1 with \(h.values("host").count) Host fields") }
            if head.version == .http10 && (head.isChunked || head.keepAlive || head.expectsContinue) {
                problem("HTTP/1.0 chunked, kept alive or expecting 100-continue")
            }
            for (name, value) in h {
                if name.isEmpty || !name.utf8.allSatisfy(HTTPRequestParser.isTokenByte) { problem("a header name \(name.debugDescription)") }
                if value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) { problem("a header value \(value.debugDescription)") }
                if value.first == " " || value.first == "\t" || value.last == " " || value.last == "\t" {
                    problem("an untrimmed header value \(value.debugDescription)")
                }
            }
            let method = head.method.description
            if method.isEmpty || !method.utf8.allSatisfy(HTTPRequestParser.isTokenByte) { problem("a method \(method.debugDescription)") }
            let target = head.target
            if target != "*" && !target.hasPrefix("/") { problem("a target \(target.debugDescription)") }
            if target == "*" && head.method != .options { problem("'*' for \(method)") }
            if target.utf8.contains(0x23) { problem("a target with a fragment \(target.debugDescription)") }
            if target.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) { problem("a target with controls, spaces or raw bytes \(target.debugDescription)") }
            if head.path.utf8.count + (head.query.map { $0.utf8.count + 1 } ?? 0) != target.utf8.count {
                problem("path and query do not make up the target \(target.debugDescription)")
            }
            // The framing fields say exactly what the head says about framing.
            let lengths = h.values("content-length").flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
                .map { $0.trimmingOWS() }
            if !lengths.isEmpty && !(lengths.allSatisfy { Int64($0) == head.contentLength && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }) {
                problem("Content-Length \(lengths) accepted as \(head.contentLength.map(String.init) ?? "nil")")
            }
            let codings = h.values("transfer-encoding").flatMap { $0.split(separator: ",") }.map { $0.trimmingOWS() }.filter { !$0.isEmpty }
            if h.contains("transfer-encoding") && (codings.count != 1 || codings[0].lowercased() != "chunked" || !head.isChunked) {
                problem("Transfer-Encoding \(codings) accepted, chunked \(head.isChunked)")
            }
            // Written out again in origin-form, the head reads back the same
            // (unless the percent-encoded target or replaced bytes now pass a limit).
            var text = "\(method) \(target) HTTP/\(head.version == .http11 ? "1.1" : "1.0")\r\n"
            for (name, value) in h { text += "\(name): \(value)\r\n" }
            text += "\r\n"
            var again = HTTPRequestParser(configuration: config)
            switch Array(text.utf8).withUnsafeBytes({ again.parse($0) }) {
            case .complete(let reread, let consumed):
                if summary(reread) != summary(head) || consumed != text.utf8.count {
                    problem("written out again, \(summary(head).debugDescription) reads as \(summary(reread).debugDescription)")
                }
            case .failure(let error) where error.status.code == 414 || error.status.code == 431:
                break
            case let other:
                problem("written out again, \(summary(head).debugDescription) gives \(other)")
            }
        }

        /// The head as the events compare it: everything the session reads.
        private func summary(_ head: HTTPRequestHead) -> String {
            let version = head.version == .http11 ? "1.1" : "1.0"
            var s = "\(head.method) \(head.target) \(version) cl=\(head.contentLength.map(String.init) ?? "-")"
            s += " chunked=\(head.isChunked) continue=\(head.expectsContinue) keepAlive=\(head.keepAlive)"
            for (name, value) in head.headers { s += " [\(name): \(value)]" }
            return s
        }
    }

    // MARK: - Field parsers

    /// A fixed clock for two-digit years: 2026-01-01.
    static let now: Int64 = 1_767_225_600

    /// Range, entity tags, dates and preconditions on one field value.
    static func checkFieldValue(_ value: String) -> [String] {
        var problems: [String] = []
        for length: Int64 in [0, 1, 7, 1000, 1 << 40, .max] {
            switch ByteRangeRequest.evaluate(value, length: length) {
            case .partial(let start, let end):
                if !(start >= 0 && start <= end && end < length) {
                    problems.append("Range \(value.debugDescription) on \(length) bytes gives \(start)-\(end)")
                }
                _ = ByteRangeRequest.contentRange(start: start, end: end, length: length)
            case .full, .unsatisfiable:
                break
            }
        }
        if let tag = EntityTag(value) {
            problems += checkTag(tag, from: value)
            if EntityTag(tag.description) != tag { problems.append("entity tag \(tag) does not round-trip") }
        }
        switch EntityTagCondition.parse([value]) {
        case .tags(let tags)?:
            for tag in tags { problems += checkTag(tag, from: value) }
        case .any?, nil:
            break
        }
        if let seconds = HTTPDate.parse(value, now: now) {
            // Years 1970...9999 format as four digits and must read back.
            if seconds >= 0 && seconds < 253_402_300_800 {
                let text = HTTPDate.format(secondsSince1970: seconds)
                if HTTPDate.parse(text, now: now) != seconds {
                    problems.append("HTTP date \(value.debugDescription) = \(seconds) formats as \(text.debugDescription), which does not read back")
                }
            }
        }
        _ = ByteRangeRequest.ifRangeAllows(value, currentETags: ["\"abc\"", "W/\"abc\""], lastModified: 784_111_777)
        let preconditions = HTTPPreconditions(ifMatch: [value], ifNoneMatch: [value], ifModifiedSince: value, ifUnmodifiedSince: value)
        for current in [nil, CurrentRepresentation(etags: ["\"abc\""], lastModified: 784_111_777)] {
            for read in [true, false] { _ = preconditions.evaluate(current: current, isReadMethod: read) }
        }
        _ = TargetRedaction.redact(value)
        return problems
    }

    private static func checkTag(_ tag: EntityTag, from value: String) -> [String] {
        let bytes = Array(tag.opaque.utf8)
        if bytes.count < 2 || bytes.first != 0x22 || bytes.last != 0x22 || bytes.dropFirst().dropLast().contains(0x22) {
            return ["entity tag \(tag.opaque.debugDescription) from \(value.debugDescription) is not a quoted tag"]
        }
        return []
    }

    /// The redacted target keeps the path and hides every secret value.
    static func checkTarget(_ target: String) -> [String] {
        let redacted = TargetRedaction.redact(target)
        guard let q = target.firstIndex(of: "?") else {
            return redacted == target ? [] : ["target \(target.debugDescription) without a query was redacted"]
        }
        return redacted.hasPrefix(target[...q]) ? [] : ["redacting \(target.debugDescription) changed its path: \(redacted.debugDescription)"]
    }

    // MARK: - Splitting

    /// FNV-1a: the input's own seed, so a crash reproduces from the file alone.
    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        return h
    }

    /// Piece sizes covering `count` bytes: mostly small (1...16), some
    /// larger, so a split falls inside every token somewhere.
    static func randomPieces(count: Int, seed: inout UInt64) -> [Int] {
        var pieces: [Int] = []
        var total = 0
        while total < count {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let r = Int(truncatingIfNeeded: seed >> 33)
            let size = r % 8 == 0 ? 1 + (r >> 3) % 512 : 1 + (r >> 3) % 16
            pieces.append(size)
            total += size
        }
        return pieces
    }
}

private extension StringProtocol {
    func trimmingOWS() -> String {
        var u = Substring(self)
        while let f = u.first, f == " " || f == "\t" { u = u.dropFirst() }
        while let l = u.last, l == " " || l == "\t" { u = u.dropLast() }
        return String(u)
    }
}
