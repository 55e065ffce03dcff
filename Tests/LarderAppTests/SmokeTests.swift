import LarderTestSupport
import LarderWire
import Testing

@Suite(.blockingLane) struct SmokeTests {
    @Test func putThenGetRoundTrip() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let put = try client.put("users/1", "{\"name\":\"Ada\"}", contentType: "application/json")
        #expect(put.status == 201)
        let get = try client.get("users/1")
        #expect(get.status == 200)
        #expect(get.text == "{\"name\":\"Ada\"}")
        #expect(get.header("Content-Type") == "application/json")
        #expect(get.header("ETag") == put.header("ETag"))
    }
}
