import Foundation
@testable import LarderDiskStore
@testable import LarderStorage
@testable import LarderValueFile
import LarderTestSupport
import Testing
import LarderStoreVocabulary

/// Attributes a face keeps with a value (`ValueWriter.setAttributes`): in
/// the file's header, in the key index for listings, across a restart, and
/// gone with the value's next write.
@Suite(.blockingLane) struct ValueAttributesTests {
    static func write(_ t: TempStore, _ key: String, _ bytes: [UInt8], attributes: [[UInt8]], after: Int = 0,
                      expected: Int64? = nil) throws -> PutOutcome {
        let upload = try t.store.beginUpload(key: try StoreKey(key), contentType: "x/y", encoding: .identity)
        if let expected { try upload.expect(bytes: expected) }
        try upload.setAttributes(attributes[0])
        try bytes.prefix(after).withUnsafeBytes { try upload.write($0) }
        for later in attributes.dropFirst() { try upload.setAttributes(later) }
        try bytes.dropFirst(after).withUnsafeBytes { try upload.write($0) }
        return try upload.finish().get()
    }

    static func listed(_ t: TempStore) throws -> [String: [UInt8]?] {
        let page = try t.store.list(prefix: .root, after: nil, limit: 100, groupByDirectory: false).get()
        return Dictionary(uniqueKeysWithValues: page.values.map { ($0.key, $0.metadata.attributes) })
    }

    @Test func keptReadListedAndReopened() throws {
        let t = try TempStore()
        let big = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let placeholder = [UInt8](repeating: 0, count: 20), final = [UInt8](repeating: 0x5A, count: 20)
        // The length may change before the body; the final digests replace the placeholder after it.
        let small = try Self.write(t, "s3/small", Array("hello".utf8), attributes: [[1, 2], placeholder, final], after: 0)
        #expect(small.metadata.attributes == final)
        _ = try Self.write(t, "s3/big", big, attributes: [placeholder, final], after: 1 << 20, expected: Int64(big.count))
        _ = try t.put("plain/one", Array("no attributes".utf8))
        #expect(try t.store.open(try StoreKey("s3/big")).get().metadata.attributes == final)
        #expect(try t.read("s3/big") == big)
        #expect(try t.store.currentMetadata(of: try StoreKey("s3/small")).get()?.attributes == final)
        #expect(try Self.listed(t) == ["s3/small": final, "s3/big": final, "plain/one": nil])

        // A restart rebuilds the index from the files' headers.
        let directory = t.directory
        t.close()
        let again = try TempStore(directory: directory)
        again.store.waitForIndex()
        #expect(try Self.listed(again) == ["s3/small": final, "s3/big": final, "plain/one": nil])

        // A write without attributes replaces them; a deleted prefix takes them along.
        _ = try again.put("s3/small", Array("plain now".utf8))
        #expect(try again.store.open(try StoreKey("s3/small")).get().metadata.attributes == nil)
        _ = try again.store.deletePrefix(try StorePrefix(bytes: Array("s3/".utf8))).get()
        _ = try Self.write(again, "s3/big", [1, 2, 3], attributes: [[9]])
        #expect(try Self.listed(again) == ["s3/big": [9], "plain/one": nil])
        #expect(again.store.index.attributes.count == 1, "the index keeps attributes only for values that have them")
    }

    @Test func refusedAttributes() throws {
        let t = try TempStore()
        let upload = try t.store.beginUpload(key: try StoreKey("k"), contentType: "x/y", encoding: .identity)
        defer { upload.abort() }
        #expect(throws: StoreError.self) { try upload.setAttributes([UInt8](repeating: 0, count: ValueMetadata.maxAttributeBytes + 1)) }
        try upload.setAttributes([1, 2, 3])
        try [UInt8](repeating: 7, count: 100_000).withUnsafeBytes { try upload.write($0) }
        try upload.setAttributes([4, 5, 6])
        #expect(throws: StoreError.self, "a length changed after the body began") { try upload.setAttributes([1]) }
        #expect(try upload.finish().get().metadata.attributes == [4, 5, 6])
    }
}
