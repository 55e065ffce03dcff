import LarderTestSupport
import LarderWire
import Testing

/// Chunk sizes on the wire (RFC 9112 7.1): a size may carry any number of
/// leading zeros; what counts is the value, which must fit.
@Suite(.blockingLane) struct ChunkedRequestBodyTests {
    @Test(arguments: ["0000000000000000000000005", "00000000000000005", "5", "000000000000000000000000000000000000000000005"])
    func leadingZerosInAChunkSizeAreAccepted(_ size: String) throws {
        let echo = try EchoServer()
        let connection = try echo.connection()
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "\(size)\r\nhello\r\n0000000000000000000000\r\n\r\n"
            + "GET /echo?next HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = try connection.readResponse()
        #expect(answer.status == 200)
        #expect(answer.text == "hello")
        #expect(try connection.readResponse().header("X-Target") == "/echo?next")
    }

    @Test(arguments: ["1000000000000000", "0000000001000000000000000", "FFFFFFFFFFFFFFFFF1"])
    func chunkSizesThatDoNotFitAre400(_ size: String) throws {
        let echo = try EchoServer()
        #expect(try echo.status(of: "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nx") == 400)
    }

    @Test func chunkSizeLineOfZerosBeyondTheLineLimitIs400() throws {
        let echo = try EchoServer()
        let zeros = String(repeating: "0", count: 5000)
        #expect(try echo.status(of: "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\(zeros)1\r\nx\r\n0\r\n\r\n") == 400)
    }
}
