import Foundation
import LarderModel
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Socket-level helpers shared by the Protocol* suites.
package enum ProtocolWire {
    /// Waits up to `seconds` for the peer to close: true when the server
    /// closed (FIN or RST) with nothing more to read. Reads and drops any
    /// data that still arrives. Works on the raw fd, so only call it after
    /// every expected response has been read with `readResponse`.
    package static func closedByServer(_ connection: HTTPClientConnection, within seconds: Double = Poll.patience) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return false }
            var pfd = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(max(1, left * 1000)))
            if ready < 0 { if errno == EINTR { continue }; return false }
            if ready == 0 { return false }
            let n = scratch.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
            if n == 0 { return true }
            if n < 0 {
                if errno == ECONNRESET { return true }
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                return true
            }
            // Unexpected extra bytes: keep draining until close or timeout.
        }
    }

    /// True when, for `seconds`, the server neither closed the connection
    /// nor sent anything unasked.
    package static func staysOpen(_ connection: HTTPClientConnection, for seconds: Double = 0.15) -> Bool {
        var pfd = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, Int32(seconds * 1000))
        return ready == 0
    }

    /// Asserts the docs/http-api.md error shape: the status, `Content-Type:
    /// application/json` and a body `{"error": code, "message": "..."}`.
    package static func expectError(_ response: ClientResponse, _ status: Int, _ code: String? = nil,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == status, "status", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type")?.hasPrefix("application/json") == true,
                "Content-Type is \(response.header("Content-Type") ?? "missing")", sourceLocation: sourceLocation)
        // Decoded as the model's `ErrorBody`, the type the server encodes and the clients decode.
        let body = try? ModelJSON.decode(ErrorBody.self, from: Data(response.body))
        #expect(body != nil, "body is not an error object: \(response.text)", sourceLocation: sourceLocation)
        if let code {
            #expect(body?.error.rawValue == code, "body: \(response.text)", sourceLocation: sourceLocation)
        }
        #expect(body?.message.isEmpty == false, "body: \(response.text)", sourceLocation: sourceLocation)
        if let length = response.header("Content-Length") {
            #expect(Int(length) == response.body.count, sourceLocation: sourceLocation)
        }
    }

    /// A response that closes: `Connection: close` and then the server's FIN.
    package static func expectCloses(_ response: ClientResponse, _ connection: HTTPClientConnection,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.header("Connection")?.lowercased() == "close", "no Connection: close", sourceLocation: sourceLocation)
        #expect(closedByServer(connection), "the server kept the connection open", sourceLocation: sourceLocation)
    }
}
