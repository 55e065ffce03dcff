import Foundation
import LarderHTTPFuzzHarness
import LarderTestSupport
import Testing

/// The fuzzer's seed corpus (Fuzz/corpus/http) replayed through the same
/// harness the libFuzzer target runs (`ParserFuzzHarness`), so `swift test`
/// checks every real and hostile request without the fuzzer: one piece,
/// random pieces and byte by byte agree, and every invariant holds.
///
/// The file names say what each must come to under the server's default
/// limits: `ok-…` is accepted whole (nothing left pending), `bad-NNN-…`
/// ends the connection with status NNN, `part-…` is accepted so far and
/// ends inside a head or a body.
@Suite(.blockingLane) struct ParserCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/corpus/http")

    static let names: [String] = {
        ((try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? []).sorted()
    }()

    @Test func corpusIsThere() {
        #expect(Self.names.count >= 100, "\(Self.corpus.path)")
        for name in Self.names {
            #expect(name.hasPrefix("ok-") || name.hasPrefix("bad-") || name.hasPrefix("part-"), "\(name)")
        }
    }

    @Test(arguments: names)
    func seedHoldsEveryInvariant(_ name: String) throws {
        let input = try [UInt8](Data(contentsOf: Self.corpus.appendingPathComponent(name)))
        let problems = ParserFuzzHarness.check(input)
        #expect(problems.isEmpty, "\(name): \(problems.prefix(5))")

        let events = ParserFuzzHarness.run(input, pieces: [input.count], limits: .production).events
        let last = events.last
        if name.hasPrefix("ok-") {
            #expect(last == .awaitingHead(unread: 0), "\(name): \(events)")
            #expect(!events.contains { if case .failure = $0 { true } else { false } }, "\(name): \(events)")
            #expect(events.contains { if case .head = $0 { true } else { false } }, "\(name): \(events)")
        } else if name.hasPrefix("bad-") {
            let status = Int(name.dropFirst(4).prefix(3))
            #expect(status != nil && last == .failure(status!), "\(name): \(events)")
        } else {
            switch last {
            case .awaitingBody?: break
            case .awaitingHead(let unread)? where unread > 0: break
            default: Issue.record("\(name): \(events)")
            }
        }
    }
}
