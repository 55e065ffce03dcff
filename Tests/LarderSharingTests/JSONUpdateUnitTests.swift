import Foundation
import LarderSharing
import LarderDiskStore
import LarderStorage
import LarderTestSupport
import LarderValueFile
import Testing
import LarderStoreVocabulary

/// JSON append and merge patch as store updates, on a real disk store:
/// the limits and errors both faces map, and what a refusal leaves.
@Suite(.blockingLane) struct JSONUpdateUnitTests {
    static func key(_ k: String) throws -> StoreKey { try StoreKey(k) }

    @Test func appendStartsAListCountsAndKeepsUnique() throws {
        let shared = try SharedStore()
        let k = try Self.key("list")
        var (outcome, count) = try JSONUpdate.append(Array(#"{"a":1}"#.utf8), unique: false, to: k, in: shared.store, condition: nil).get()
        #expect(count == 1 && outcome.created)
        #expect(outcome.metadata.contentType == "application/json")
        (outcome, count) = try JSONUpdate.append(Array(#"[2,3]"#.utf8), unique: false, to: k, in: shared.store, condition: nil).get()
        #expect(count == 3)
        (_, count) = try JSONUpdate.append(Array("2".utf8), unique: true, to: k, in: shared.store, condition: nil).get()
        #expect(count == 3)
        #expect(try shared.text("list") == #"[{"a":1},2,3]"#)
    }

    /// Refusals leave the stored value as it was: a body that is not JSON
    /// or is too large (before the store is asked), a stored value that is
    /// not JSON, a failing condition.
    @Test func refusalsChangeNothing() throws {
        let shared = try SharedStore()
        let k = try Self.key("doc")
        let etag = try shared.put("doc", "not json").metadata.etag
        do {
            _ = try JSONUpdate.append(Array("{".utf8), unique: false, to: k, in: shared.store, condition: nil).get()
            Issue.record("a broken body was appended")
        } catch let error as JSONUpdateError {
            guard case .bodyNotJSON = error else { Issue.record("\(error)"); return }
        }
        do {
            _ = try JSONUpdate.append(Array("[1]".utf8), unique: false, to: k, in: shared.store, condition: nil).get()
            Issue.record("appended to a value that is not JSON")
        } catch let error as JSONUpdateError {
            guard case .storedNotJSON = error else { Issue.record("\(error)"); return }
            #expect(error.description.hasSuffix("so it cannot be updated as JSON"))
        }
        let big = [UInt8](repeating: 0x20, count: JSONUpdate.maxBodyBytes) + Array("1".utf8)
        #expect(throws: JSONUpdateError.bodyTooLarge(limit: JSONUpdate.maxBodyBytes)) {
            _ = try JSONUpdate.mergePatch(big, into: k, in: shared.store, condition: nil).get()
        }
        #expect(throws: StoreError.self) {
            _ = try JSONUpdate.append(Array("1".utf8), unique: false, to: try Self.key("fresh"), in: shared.store,
                                      condition: WriteConditions.mustMatch("\"nope\"")).get()
        }
        #expect(try shared.text("doc") == "not json")
        let value = try shared.store.open(k).get()
        defer { value.close() }
        #expect(value.metadata.etag == etag)
    }

    @Test func mergePatchNeedsAValueAndReturnsTheDocument() throws {
        let shared = try SharedStore()
        #expect(throws: StoreError.self) {
            _ = try JSONUpdate.mergePatch(Array(#"{"a":1}"#.utf8), into: try Self.key("none"), in: shared.store, condition: nil).get()
        }
        try shared.put("cfg", #"{"a":1,"b":{"c":2}}"#, type: "application/vnd.test+json")
        let (outcome, document) = try JSONUpdate.mergePatch(Array(#"{"b":{"c":null,"d":3}}"#.utf8), into: try Self.key("cfg"),
                                                            in: shared.store, condition: nil).get()
        #expect(String(decoding: document, as: UTF8.self) == #"{"a":1,"b":{"d":3}}"#)
        #expect(try shared.text("cfg") == #"{"a":1,"b":{"d":3}}"#)
        // The value keeps its own content type.
        #expect(outcome.metadata.contentType == "application/vnd.test+json")
    }

    /// A document that would grow past `maxValueBytes` is refused, and the
    /// value stays as it was.
    @Test func theValueLimitHolds() throws {
        let shared = try SharedStore()
        let k = try Self.key("big")
        // `["xxx…"]`, 16 bytes short of the limit.
        let nearlyFull = "[\"" + String(repeating: "x", count: JSONUpdate.maxValueBytes - 20) + "\"]"
        let etag = try shared.put("big", nearlyFull, type: "application/json").metadata.etag
        #expect(throws: StoreError.tooLarge(limit: Int64(JSONUpdate.maxValueBytes))) {
            _ = try JSONUpdate.append(Array("\"0123456789abcdef\"".utf8), unique: false, to: k, in: shared.store, condition: nil).get()
        }
        let value = try shared.store.open(k).get()
        defer { value.close() }
        #expect(value.metadata.etag == etag)
    }
}
