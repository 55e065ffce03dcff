import LarderTestSupport
import LarderWire
import Testing

/// What a server answers a request line or Host it must not take as is,
/// spoken over a real socket: RFC 9112 3.2 (Host), RFC 9110 2.5 (versions)
/// and fragments in the target.
@Suite(.blockingLane) struct RequestValidationTests {
    @Test(arguments: ["a b", "a/b", "a@b", "localhost:80x", "localhost:8080:1", "[::1", "[::1]x", "[zz]", "%zz", "a\"b"])
    func hostThatIsNoHostIs400(_ host: String) throws {
        let echo = try EchoServer()
        #expect(try echo.status(of: "GET /echo HTTP/1.1\r\nHost: \(host)\r\n\r\n") == 400, "Host: \(host)")
        // HTTP/1.0 need not send Host, but one it sends is checked the same.
        #expect(try echo.status(of: "GET /echo HTTP/1.0\r\nHost: \(host)\r\n\r\n") == 400, "Host: \(host) in 1.0")
    }

    @Test(arguments: ["x", "localhost:8080", "127.0.0.1:1", "[::1]:8080", "[2001:db8::7]", "[v1.fe:x]", "a-b.c_d~e", "%41b:", ""])
    func validHostsAreAccepted(_ host: String) throws {
        let echo = try EchoServer()
        #expect(try echo.status(of: "GET /echo HTTP/1.1\r\nHost: \(host)\r\n\r\n") == 200, "Host: \(host)")
    }

    @Test(arguments: ["HTTP/1.2", "HTTP/1.9"])
    func higherMinorVersionIsAnsweredAs11(_ version: String) throws {
        let echo = try EchoServer()
        let connection = try echo.connection()
        // Kept alive as 1.1 is: a second request on the same connection is answered too.
        try connection.send("GET /echo HTTP/1.2\r\nHost: x\r\n\r\nGET /echo?again HTTP/1.1\r\nHost: x\r\n\r\n"
            .replacingOccurrences(of: "HTTP/1.2", with: version))
        let first = try connection.readResponse()
        #expect(first.status == 200)
        #expect(first.header("Connection") == nil)
        #expect(try connection.readResponse().header("X-Target") == "/echo?again")
        // As in 1.1, Host is required.
        #expect(try echo.status(of: "GET /echo \(version)\r\n\r\n") == 400)
    }

    @Test(arguments: ["HTTP/2.0", "HTTP/0.9", "HTTP/3.0"])
    func otherMajorVersionsAre505(_ version: String) throws {
        let echo = try EchoServer()
        #expect(try echo.status(of: "GET /echo \(version)\r\nHost: x\r\n\r\n") == 505)
    }

    @Test(arguments: ["/echo#frag", "/echo?a=1#x", "/store/a#b", "http://x/echo#y", "/#"])
    func fragmentInTheTargetIs400(_ target: String) throws {
        let echo = try EchoServer()
        let connection = try echo.connection()
        try connection.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = try connection.readResponse()
        #expect(answer.status == 400)
        #expect(answer.text.contains("#"))
        // An escaped one is a plain byte of the key.
        #expect(try echo.status(of: "GET /store/a%23b HTTP/1.1\r\nHost: x\r\n\r\n") == 200)
    }
}
