@testable import LarderHTTP
import LarderTestSupport
import Testing

/// The arithmetic of faults of the network, without sockets: how many
/// bytes a paced transfer may move when (`ByteRate`), and what a shaped
/// body puts into the output (`ShapedBody`): cut after N body bytes, paced
/// in slices, chunk-framed without its last chunk when cut.
@Suite(.blockingLane) struct ShapedBodyTests {
    static let second: UInt64 = 1_000_000_000

    @Test func aRateLetsWholeSlicesThroughAsTimePasses() {
        var rate = ByteRate(bytesPerSecond: 1000, start: 5 * Self.second)
        #expect(rate.allowance(now: 5 * Self.second) == 0)
        #expect(rate.nextSlice() == 5 * Self.second + Self.second / 10)
        #expect(rate.allowance(now: 5 * Self.second + Self.second / 20) == 0, "half a slice is not let through")
        #expect(rate.allowance(now: 5 * Self.second + Self.second / 10) == 100)
        rate.moved(100)
        #expect(rate.allowance(now: 5 * Self.second + Self.second / 10) == 0)
        #expect(rate.allowance(now: 7 * Self.second) == 1900, "time not used is not lost")
        #expect(rate.allowance(now: 0) == 0, "a clock before the start gives nothing")
    }

    /// A fast pace moves, in one wake, everything that came due, however
    /// many pieces that takes; the next wake waits for a whole slice again.
    @Test func oneWakeMovesAllThatCameDueInPieces() {
        var rate = ByteRate(bytesPerSecond: 10 << 20, start: 0)
        let wake = Self.second / 10
        var moved: Int64 = 0
        while case let open = rate.allowance(now: wake), open > 0 {
            let piece = min(open, 64 << 10)
            rate.moved(piece)
            moved += piece
        }
        #expect(moved == (10 << 20) / 10, "a tenth of a second at 10 MiB/s moved in 64 KiB pieces in one wake")
        #expect(rate.allowance(now: wake + Self.second / 100) == 0, "a tenth of a slice later: wait for a whole one")
        #expect(rate.allowance(now: 2 * wake) == (10 << 20) / 10)
    }

    @Test func aRateIsClampedSoItsArithmeticCannotOverflow() {
        var rate = ByteRate(bytesPerSecond: .max, start: 0)
        #expect(rate.bytesPerSecond == ByteRate.maxBytesPerSecond)
        #expect(rate.allowance(now: 1_000_000 * Self.second) > 0)
    }

    @Test func aTinyRateStillMovesAByteAtATime() {
        var rate = ByteRate(bytesPerSecond: 1, start: 0)
        #expect(rate.allowance(now: Self.second) == 1)
        #expect(rate.nextSlice() == Self.second)
    }

    static func drain(_ body: ShapedBody, now: UInt64 = .max / 2) -> (bytes: [UInt8], last: ShapedBody.Step) {
        var output = OutputBuffer(capacity: 1024)
        defer { output.deallocate() }
        while true {
            let step = body.advance(into: &output, max: 7, now: now)
            if case .more = step { continue }
            return (Array(output.unsent), step)
        }
    }

    @Test func aCutEndsASizedBodyAfterNBytes() {
        let body = ShapedBody(source: MemoryBodyStream(Array(0..<100)), length: 100, chunked: false, cutAfter: 30, rate: nil)
        let (bytes, last) = Self.drain(body)
        #expect(bytes == Array(0..<30))
        guard case .cut = last else { Issue.record("\(last)"); return }
    }

    @Test func aCutLongerThanTheBodySendsItWhole() {
        let body = ShapedBody(source: MemoryBodyStream(Array(0..<20)), length: 20, chunked: false, cutAfter: 30, rate: nil)
        let (bytes, last) = Self.drain(body)
        #expect(bytes == Array(0..<20))
        guard case .done(_, closeAfter: false) = last else { Issue.record("\(last)"); return }
    }

    @Test func aCutChunkedBodyHasNoLastChunk() {
        let body = ShapedBody(source: MemoryBodyStream(Array(repeating: 0x61, count: 50)), length: nil, chunked: true,
                              cutAfter: 10, rate: nil)
        let (bytes, last) = Self.drain(body)
        #expect(String(decoding: bytes, as: UTF8.self) == "7\r\naaaaaaa\r\n3\r\naaa\r\n")
        guard case .cut = last else { Issue.record("\(last)"); return }
        let whole = ShapedBody(source: MemoryBodyStream(Array(repeating: 0x61, count: 3)), length: nil, chunked: true,
                               cutAfter: nil, rate: nil)
        #expect(String(decoding: Self.drain(whole).bytes, as: UTF8.self) == "3\r\naaa\r\n0\r\n\r\n")
    }

    @Test func aPacedBodyPausesUntilItsNextSlice() {
        let body = ShapedBody(source: MemoryBodyStream(Array(repeating: 1, count: 100)), length: 100, chunked: false,
                              cutAfter: nil, rate: ByteRate(bytesPerSecond: 100, start: 0))
        var output = OutputBuffer(capacity: 1024)
        defer { output.deallocate() }
        guard case .paused(let until) = body.advance(into: &output, max: 64, now: 0) else { Issue.record("not paused"); return }
        #expect(until == Self.second / 10)
        guard case .more(let n) = body.advance(into: &output, max: 64, now: until) else { Issue.record("no slice"); return }
        #expect(n == 10)
        guard case .paused = body.advance(into: &output, max: 64, now: until) else { Issue.record("not paused again"); return }
        guard case .more(let rest) = body.advance(into: &output, max: 200, now: 2 * Self.second) else { Issue.record("no rest"); return }
        #expect(rest == 90)
        guard case .done = body.advance(into: &output, max: 64, now: 2 * Self.second) else { Issue.record("not done"); return }
        #expect(output.count == 100)
    }

    @Test func aSizedStreamEndingEarlyFails() {
        let body = ShapedBody(source: MemoryBodyStream(Array(0..<10)), length: 20, chunked: false, cutAfter: nil, rate: nil)
        guard case .failed = Self.drain(body).last else { Issue.record("a short stream did not fail"); return }
    }
}
