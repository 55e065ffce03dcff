import Foundation
@testable import LarderClient
import LarderApp
import LarderRouting
import LarderServer
import LarderTestSupport
import LarderWire
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A connection that breaks under a call (faults of the network on a real
/// server: `drop`, `truncate`) is `LarderError.connectionLost`, saying how
/// it broke and, for a write, that its outcome is unknown; a conditional
/// retry then finds out.
@Suite(.asyncLane) struct ConnectionLossTests {
    static func faultServer() throws -> (TestServer, WireClient) {
        let server = try TestServer { $0.allowFaults = true }
        return (server, server.client())
    }

    static func setRules(_ wire: WireClient, _ rules: String) throws {
        let response = try wire.send("PUT", "/faults", body: Array(rules.utf8))
        #expect(response.status == 200, "\(response.text)")
    }

    @Test(arguments: LarderClientTests.transports) func aResetReadIsConnectionLostAndNotAWrite(_ transport: LarderClient.Transport) async throws {
        let (server, wire) = try Self.faultServer()
        #expect(try wire.put("b/k", "v").status == 201)
        try Self.setRules(wire, #"[{"prefix":"b/","drop":"before"}]"#)
        let larder = LarderClientTests.client(server, transport: transport)
        await #expect { try await larder.fetch("b/k") } throws: { error in
            guard let e = error as? LarderError, case .connectionLost(let url, let method, .reset) = e else { return false }
            return url.hasSuffix("/store/b/k") && method == "GET" && !e.outcomeUnknown
                && e.description.contains("reset")
        }
    }

    @Test(arguments: LarderClientTests.transports) func aWriteDroppedAfterItsStoreHasAnUnknownOutcome(_ transport: LarderClient.Transport) async throws {
        let (server, wire) = try Self.faultServer()
        try Self.setRules(wire, #"[{"prefix":"a/","methods":["PUT"],"drop":"after","count":1}]"#)
        let larder = LarderClientTests.client(server, transport: transport)
        await #expect { try await larder.save(Data("first".utf8), at: "a/k", contentType: "text/plain", condition: .ifAbsent, ttl: nil) } throws: { error in
            guard let e = error as? LarderError, case .connectionLost(_, "PUT", .reset) = e else { return false }
            return e.outcomeUnknown && e.description.contains("outcome is unknown")
        }
        // The retry of the create tells: the first one happened.
        await #expect { try await larder.save(Data("second".utf8), at: "a/k", contentType: "text/plain", condition: .ifAbsent, ttl: nil) } throws: { error in
            guard case LarderError.preconditionFailed = error else { return false }
            return true
        }
        #expect(String(decoding: try await larder.fetch("a/k").data, as: UTF8.self) == "first")
    }

    @Test(arguments: LarderClientTests.transports) func aTruncatedAnswerIsCutShort(_ transport: LarderClient.Transport) async throws {
        let (server, wire) = try Self.faultServer()
        #expect(try wire.put("t/k", String(repeating: "x", count: 1000)).status == 201)
        try Self.setRules(wire, #"[{"prefix":"t/","truncate":100}]"#)
        let larder = LarderClientTests.client(server, transport: transport)
        await #expect { try await larder.fetch("t/k") } throws: { error in
            guard let e = error as? LarderError, case .connectionLost(_, "GET", .answerCutShort) = e else { return false }
            return e.description.contains("ended early")
        }
    }
}
