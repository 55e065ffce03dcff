import LarderStorage
import LarderValueFile
import LarderStoreVocabulary
import Testing

/// `WriteConditions`: the create-only and match-this-version checks every
/// front end builds its 412 on, given the current metadata (nil: absent).
@Suite struct WriteConditionsTests {
    static let current = ValueMetadata(key: "k", contentType: "text/plain", size: 3, version: 0x2a, modifiedNanos: 1)

    static func passes(_ condition: WriteCondition, _ meta: ValueMetadata?) -> Bool {
        do { try condition(meta); return true } catch { return false }
    }

    static func failsWithPreconditionFailed(_ condition: WriteCondition, _ meta: ValueMetadata?) -> Bool {
        do { try condition(meta); return false } catch { return (error as? StoreError) == .preconditionFailed }
    }

    @Test func mustNotExistPassesOnlyWhenTheKeyIsAbsent() {
        #expect(Self.passes(WriteConditions.mustNotExist, nil))
        #expect(Self.failsWithPreconditionFailed(WriteConditions.mustNotExist, Self.current))
    }

    @Test func mustMatchTakesEitherRepresentationsStrongTag() {
        #expect(Self.current.etag == "\"000000000000002a\"")
        #expect(Self.passes(WriteConditions.mustMatch(Self.current.etag), Self.current))
        #expect(Self.passes(WriteConditions.mustMatch(Self.current.gzipETag), Self.current))
        #expect(Self.passes(WriteConditions.mustMatch(" \t\(Self.current.etag) \t"), Self.current), "spaces around a header value")
    }

    @Test func mustMatchRejectsAnotherVersionAWeakTagAndAnUnquotedOne() {
        let other = ValueMetadata.etag(version: 0x2b)
        for tag in [other, "W/" + Self.current.etag, "000000000000002a", "\"000000000000002A\"", ""] {
            #expect(Self.failsWithPreconditionFailed(WriteConditions.mustMatch(tag), Self.current), "\(tag)")
        }
    }

    @Test func mustMatchNeedsAValueEvenForAStar() {
        #expect(Self.passes(WriteConditions.mustMatch("*"), Self.current))
        #expect(Self.failsWithPreconditionFailed(WriteConditions.mustMatch("*"), nil))
        #expect(Self.failsWithPreconditionFailed(WriteConditions.mustMatch(Self.current.etag), nil))
    }
}
