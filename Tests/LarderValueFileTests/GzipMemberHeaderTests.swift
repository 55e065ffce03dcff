import CZlib
import Foundation
@testable import LarderValueFile
import LarderTestSupport
import Testing
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

@Suite(.blockingLane) struct GzipMemberHeaderUnitTests {
    @Test func parsesClientHeaders() throws {
        let plain = StoreTestSupport.gzip(Array("x".utf8))
        #expect(try GzipMemberHeader.parse(plain) == .complete(length: 10))
        let named = StoreTestSupport.gzip(Array("x".utf8), name: "file.txt")
        #expect(try GzipMemberHeader.parse(named) == .complete(length: 10 + 9))
        #expect(try GzipMemberHeader.parse(Array(named.prefix(15))) == .needMore)
        #expect(try GzipMemberHeader.parse([0x1F]) == .needMore)
        #expect(throws: StoreError.self) { try GzipMemberHeader.parse([0x1F, 0x8C]) }
        #expect(throws: StoreError.self) { try GzipMemberHeader.parse(Array("hello world".utf8)) }
        var method = plain; method[2] = 7
        #expect(throws: StoreError.self) { try GzipMemberHeader.parse(method) }
        var reserved = plain; reserved[3] = 0x80
        #expect(throws: StoreError.self) { try GzipMemberHeader.parse(reserved) }
    }
}
