/// A response body on its way to the socket, one case per kind of
/// `HTTPResponseBody` that outlives the head: how it starts after the head,
/// how it refills the output (or sends itself), and how it is let go. A new
/// body kind is a case of `HTTPResponseBody` and of this enum, and nothing
/// else in the session changes.
///
/// Payloads are a reference and counters, stored inline in the session: no
/// allocation per response.
enum OutgoingBody {
    /// Exactly `remaining` more bytes pulled from the stream.
    case pull(HTTPBodyStream, remaining: Int64)
    /// Pulled until `read` returns 0: chunked, or ended by closing.
    case pullUnsized(HTTPBodyStream, chunked: Bool)
    /// Written by the application (an event stream), taken when it wakes the session.
    case push(HTTPPushStream, chunked: Bool)
    /// A file region going out with `sendfile`: where it is, what is left.
    case file(HTTPFileRegion, offset: Int64, remaining: Int64)
    /// Cut short or paced by a fault of the network, whatever its kind.
    case shaped(ShapedBody)

    /// Body bytes of a streamed response buffered ahead of the socket.
    static let streamAhead = 256 * 1024
    private static let piece = 64 * 1024

    /// Puts a response body after its head, framed as `framing` says: a
    /// body in memory goes into `output` at once (nil returned), a longer
    /// one becomes the outgoing body. `bytes`: the body's length when known.
    static func start(_ body: HTTPResponseBody, framing: ResponseEncoder.Framing,
                      into output: inout OutputBuffer) -> (body: OutgoingBody?, bytes: Int64) {
        switch (framing, body) {
        case (.length(let n), .bytes(let b)):
            output.append(b)
            return (nil, n)
        case (.length(let n), .stream(let s, _)) where n > 0:
            return (.pull(s, remaining: n), n)
        case (.length(let n), .file(let f)) where n > 0:
            // The prefix rides with the head; the file follows once it is out.
            output.append(f.prefix)
            return (.file(f, offset: f.offset, remaining: f.length), n)
        case (.chunked, .unsizedStream(let s)):
            return (.pullUnsized(s, chunked: true), 0)
        case (.untilClose, .unsizedStream(let s)):
            return (.pullUnsized(s, chunked: false), 0)
        case (.chunked, .push(let p)):
            return (.push(p, chunked: true), 0)
        case (.untilClose, .push(let p)):
            return (.push(p, chunked: false), 0)
        default:
            // No body goes out (HEAD, 204, 304, empty): release what it holds.
            body.discard()
            return (nil, 0)
        }
    }

    var isPush: Bool { if case .push = self { true } else { false } }

    /// Pulled bodies refill the output as it drains; the others do not.
    var refillsOutput: Bool {
        switch self {
        case .pull, .pullUnsized, .shaped: true
        case .push, .file: false
        }
    }

    enum Progress {
        /// More to come: send the output, then call again. `bytes`: body
        /// bytes this call added (an unsized body counts as it goes).
        case more(bytes: Int64)
        /// Waiting for the socket (or it closed): the channel calls back.
        case waiting
        /// A paced body's budget is spent until `until` (uptime
        /// nanoseconds); `bytes` as for `more`.
        case paused(bytes: Int64, until: UInt64)
        /// Everything is queued or sent. `bytes`: as for `more`; `closeAfter`: the end of the
        /// body is the connection's end (an HTTP/1.0 unsized body).
        case done(bytes: Int64, closeAfter: Bool)
        /// The body failed after its head went out.
        case failed(any Error)
    }

    /// Moves the body toward the socket: refills `channel.output` from a
    /// pulled stream up to `streamAhead`, or sends the file region after
    /// the output. A push body does nothing here (its pieces come through
    /// `HTTP1Session.takePushed`).
    mutating func advance(on channel: SocketChannel) -> Progress {
        switch self {
        case .pull(let s, var remaining):
            do {
                while channel.output.count < Self.streamAhead && remaining > 0 {
                    let n = try channel.output.fill(max: Int(min(Int64(Self.piece), remaining))) { try s.read(into: $0) }
                    if n == 0 {
                        throw HTTPError(.internalServerError, .internalError, "the body ended \(remaining) bytes early")
                    }
                    remaining -= Int64(n)
                }
            } catch {
                return .failed(error)
            }
            guard remaining == 0 else {
                self = .pull(s, remaining: remaining)
                return .more(bytes: 0)
            }
            s.close()
            return .done(bytes: 0, closeAfter: false)
        case .pullUnsized(let s, let chunked):
            var bytes: Int64 = 0
            do {
                while channel.output.count < Self.streamAhead {
                    let n = chunked ? try channel.output.fillChunk(max: Self.piece) { try s.read(into: $0) }
                                    : try channel.output.fill(max: Self.piece) { try s.read(into: $0) }
                    if n == 0 {
                        s.close()
                        if chunked { channel.output.append(ResponseEncoder.lastChunk) }
                        return .done(bytes: bytes, closeAfter: !chunked)
                    }
                    bytes += Int64(n)
                }
            } catch {
                return .failed(error)
            }
            return .more(bytes: bytes)
        case .file(let f, var offset, var remaining):
            let sent = channel.flush(file: f.fd, offset: &offset, remaining: &remaining)
            guard sent, !channel.closed else {
                self = .file(f, offset: offset, remaining: remaining)
                return .waiting
            }
            f.close()
            return .done(bytes: 0, closeAfter: false)
        case .shaped(let shaped):
            var bytes: Int64 = 0
            while channel.output.count < Self.streamAhead {
                switch shaped.advance(into: &channel.output, max: Self.piece, now: channel.now) {
                case .more(let n): bytes += n
                case .paused(let until): return .paused(bytes: bytes, until: until)
                case .done(let n, let closeAfter): return .done(bytes: bytes + n, closeAfter: closeAfter)
                case .cut(let n): return .done(bytes: bytes + n, closeAfter: true)
                case .failed(let error): return .failed(error)
                }
            }
            return .more(bytes: bytes)
        case .push:
            return .waiting
        }
    }

    /// Lets go of what the body holds when it will not be sent to the end
    /// (the connection closed or failed).
    func cancel() {
        switch self {
        case .pull(let s, _), .pullUnsized(let s, _): s.close()
        case .push(let p, _): p.connectionClosed()
        case .file(let f, _, _): f.close()
        case .shaped(let shaped): shaped.cancel()
        }
    }
}
