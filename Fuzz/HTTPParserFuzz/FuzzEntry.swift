// libFuzzer entry point for the HTTP request parser. Compiled by
// Fuzz/build.sh together with the harness (Fuzz/Harness, not a SwiftPM
// target itself: SwiftPM would link this symbol into the test bundle); the
// checks live in ParserFuzzHarness, which the Swift Testing corpus replay
// runs too.
#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func larderHTTPParserFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let problems = ParserFuzzHarness.check(input)
    if !problems.isEmpty {
        for problem in problems.prefix(10) { fputs("invariant: \(problem)\n", stderr) }
        abort()
    }
    return 0
}
