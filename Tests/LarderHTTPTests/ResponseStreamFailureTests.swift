import Foundation
import LarderTestSupport
import LarderWire
import Testing

/// A response body that fails after its head is out cuts the connection
/// (the only way left to say the body is incomplete) and logs one error
/// line naming the request with its secrets redacted, whatever the body's
/// framing.
@Suite(.blockingLane) struct ResponseStreamFailureTests {
    @Test(arguments: ["/unsized-fails", "/sized-fails"])
    func failedStreamCutsTheConnectionAndLogsTheTargetRedacted(_ path: String) throws {
        let log = CapturedLog()
        let echo = try EchoServer(logger: log.logger)
        let connection = try echo.connection()
        try connection.send("GET \(path)?access_token=s3cret&x=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        // The body never completes (the head may or may not have left
        // first): the server cuts the connection, so no whole answer arrives.
        #expect(throws: (any Error).self) { try connection.readResponse() }
        // The error line is written before the connection closes.
        let text = log.text
        let errors = text.split(separator: "\n").filter { $0.contains("failed") }
        #expect(errors.count == 1, "\(text)")
        #expect(errors.first?.contains("\(path)?access_token=REDACTED&x=1") == true, "\(text)")
        #expect(errors.first?.contains("the disk went away") == true, "\(text)")
        #expect(!text.contains("s3cret"), "\(text)")
    }
}
