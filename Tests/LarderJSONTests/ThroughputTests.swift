import Testing
import LarderJSON

@Suite("Throughput")
struct ThroughputTests {
    /// Prints parse+serialize throughput for a ~1 KiB object; informational only.
    @Test func parseAndSerializeOneKiBObject() throws {
        var text = #"{"id":"c0ffee-1234","ok":true,"count":1234567,"ratio":0.125,"tags":["alpha","beta","gamma"],"#
        var i = 0
        while text.utf8.count < 980 {
            text += #""field\#(i)":{"name":"value \#(i) \u00e9","n":\#(i * 37),"x":\#(i).5e-2,"on":false},"#
            i += 1
        }
        text += #""end":null}"#
        let bytes = Array(text.utf8)
        let original = try JSONValue.parse(bytes)

        let clock = ContinuousClock()
        var iterations = 0
        var outputBytes = 0
        let start = clock.now
        while clock.now - start < .milliseconds(500) {
            for _ in 0..<100 {
                let value = try JSONValue.parse(bytes)
                outputBytes &+= value.serialized().count
            }
            iterations += 100
        }
        let seconds = Double((clock.now - start).components.attoseconds) / 1e18
            + Double((clock.now - start).components.seconds)
        let opsPerSecond = Double(iterations) / seconds
        let mibPerSecond = opsPerSecond * Double(bytes.count) / 1_048_576
        print("LarderJSON throughput: \(bytes.count)-byte object, parse+serialize \(Int(opsPerSecond)) ops/s (\(Int(mibPerSecond)) MiB/s)")
        #expect(try JSONValue.parse(original.serialized()) == original)
        #expect(outputBytes > 0)
    }
}
