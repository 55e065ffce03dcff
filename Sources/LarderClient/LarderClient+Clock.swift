import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension LarderClient {
    /// `GET /clock`: this client's namespace's clock (docs/time.md).
    public func clock() async throws -> ClockState {
        try Self.clockState(await transport.send(transport.request("GET", transport.url("/clock"))))
    }

    /// Moves the namespace's clock forward by `duration` (whole
    /// milliseconds); keys whose expiry it passes are gone, with their
    /// `expire` events, when this returns.
    ///
    /// ```swift
    /// _ = try await larder.save(Data("{}".utf8), at: "sessions/abc", contentType: "application/json",
    ///                           condition: .none, ttl: .seconds(1800))
    /// try await larder.advanceClock(by: .seconds(31 * 60))
    /// #expect(try await larder.fetchIfPresent("sessions/abc") == nil)
    /// ```
    @discardableResult
    public func advanceClock(by duration: Duration) async throws -> ClockState {
        let (seconds, attoseconds) = duration.components
        return try await moveClock(#"{"advance":\#(max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000))}"#)
    }

    /// Moves the namespace's clock forward to `date`; a date before its
    /// now is `LarderError.server` with `clock_backwards`.
    @discardableResult
    public func setClock(to date: Date) async throws -> ClockState {
        let nanos = Int64((date.timeIntervalSince1970 * 1000).rounded()) * 1_000_000
        return try await moveClock(#"{"set":"\#(ISO8601.format(nanos: nanos, milliseconds: true))"}"#)
    }

    /// Stops the namespace's clock where it is (`frozen: false` lets it run on from there).
    @discardableResult
    public func freezeClock(_ frozen: Bool = true) async throws -> ClockState {
        try await moveClock(#"{"freeze":\#(frozen)}"#)
    }

    /// `DELETE /clock`: back on the system clock.
    @discardableResult
    public func resetClock() async throws -> ClockState {
        try Self.clockState(await transport.send(transport.request("DELETE", transport.url("/clock"))))
    }

    private func moveClock(_ json: String) async throws -> ClockState {
        var request = transport.request("POST", transport.url("/clock"))
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(json.utf8)
        return try Self.clockState(await transport.send(request))
    }

    /// The state a `/clock` answer carries, or its error.
    private static func clockState(_ answer: HTTPAnswer) throws -> ClockState {
        guard answer.status == 200 else { throw ErrorMapping.error(status: answer.status, body: answer.body, key: "") }
        return try decode(ClockState.self, answer)
    }
}
