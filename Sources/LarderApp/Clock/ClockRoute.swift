import LarderHTTP
import LarderJSON
import LarderModel
import LarderRouting
import LarderStorage
import LarderStoreVocabulary
import LarderSupport

/// `/clock` of a namespace (API.md "Time under the test's control"):
///
/// - `GET` its clock now: `{"now": "...", "offsetMs": 0, "frozen": false}`;
/// - `POST` moves it, one move a request: `{"advance": "90s"}` (or a number
///   of milliseconds), `{"set": "2030-01-01T00:00:00Z"}`, `{"freeze": true}`
///   or `{"freeze": false}`; answers the new state once what expired by it
///   is gone (`ValueStore.moveClock`);
/// - `DELETE` puts it back on the system clock.
///
/// A `set` before the clock's now is 400 `clock_backwards`; a body that is
/// not one of the moves is 400 `invalid_argument` (`invalid_json` when it
/// is not JSON).
struct ClockRoute: Route {
    let store: any ValueStore
    let logger: Logger

    static let methods = "GET, HEAD, POST, DELETE, OPTIONS"
    static let maxBody = 4096

    func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        switch request.method {
        case .get, .head:
            return .respond(Self.response(store.clock.reading))
        case .delete:
            return try move(.reset, request)
        case .post:
            let store = store
            return .receiveBody(BufferedBodySink(
                limit: Self.maxBody, what: "a clock move", responder: request.responder,
                update: { bytes -> StoreReply<StoreClock.Reading> in
                    do throws(HTTPError) {
                        return store.moveClock(try Self.move(bytes))
                    } catch {
                        return .now(.failure(error))
                    }
                },
                answer: answer))
        case .options:
            return .respond(.allow(Self.methods))
        default:
            throw HTTPError(.methodNotAllowed, .methodNotAllowed, "\(request.method) is not allowed on /clock",
                            headers: [("Allow", Self.methods)])
        }
    }

    private func move(_ move: StoreClock.Move, _ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        try .after(store.moveClock(move), ClosureAnswer(body: answer), request.responder)
    }

    /// The new state, or why not: a backwards `set` here, everything else
    /// (a body refused, a store failure) by `ErrorMapping`.
    @Sendable
    func answer(_ result: Result<StoreClock.Reading, any Error>) throws(HTTPError) -> HTTPResponse {
        switch result {
        case .success(let reading):
            return Self.response(reading)
        case .failure(let error as StoreClock.Backwards):
            throw HTTPError(.badRequest, .clockBackwards,
                            "the clock cannot move backwards: it reads \(ISO8601.format(nanos: error.nowNanos, milliseconds: true)), "
                                + "asked for \(ISO8601.format(nanos: error.askedNanos, milliseconds: true)) "
                                + "(DELETE /clock puts it back on the system clock)")
        case .failure(let error):
            throw ErrorMapping.httpError(error, logger: logger, context: "/clock")
        }
    }

    static func response(_ reading: StoreClock.Reading) -> HTTPResponse {
        .json(.ok, ClockState(now: ISO8601.format(nanos: reading.nowNanos, milliseconds: true),
                              offsetMs: reading.offsetNanos / 1_000_000, frozen: reading.frozen),
              headers: [("Cache-Control", "no-store")])
    }

    static let usage = #"POST /clock takes one of {"advance": "90s"}, {"set": "2030-01-01T00:00:00Z"}, {"freeze": true|false}"#

    /// The move a `POST` body asks for.
    static func move(_ bytes: [UInt8]) throws(HTTPError) -> StoreClock.Move {
        let document: JSONValue
        do throws(JSONParseError) {
            document = try JSONValue.parse(bytes)
        } catch {
            throw HTTPError(.badRequest, .invalidJSON, "the clock move is not JSON: \(error.message)")
        }
        guard case .object(let members) = document, members.count == 1, let (name, value) = members.first else {
            throw HTTPError(.badRequest, .invalidArgument, usage)
        }
        switch (name, value) {
        case ("advance", .number(let text)):
            guard let ms = Int64(text), ms >= 0, ms <= ClockDuration.maxMilliseconds else {
                throw HTTPError(.badRequest, .invalidArgument, "\"advance\" in milliseconds must be a whole number from 0 to \(ClockDuration.maxMilliseconds)")
            }
            return .advance(ms * 1_000_000)
        case ("advance", .string(let text)):
            guard let nanos = ClockDuration.nanos(text) else {
                throw HTTPError(.badRequest, .invalidArgument,
                                "\"advance\" must be a duration such as \"500ms\", \"90s\", \"15m\", \"2h\" or \"3d\", or milliseconds as a number")
            }
            return .advance(nanos)
        case ("set", .string(let text)):
            guard let nanos = ISO8601.parse(text) else {
                throw HTTPError(.badRequest, .invalidArgument, "\"set\" must be an RFC 3339 date-time such as \"2030-01-01T00:00:00Z\"")
            }
            return .set(nanos)
        case ("freeze", .bool(let on)):
            return on ? .freeze : .unfreeze
        default:
            throw HTTPError(.badRequest, .invalidArgument, usage)
        }
    }
}
