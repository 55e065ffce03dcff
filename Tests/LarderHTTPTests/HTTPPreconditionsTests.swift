import LarderTestSupport
import Testing
import LarderHTTP

private let t0: Int64 = 784_111_777                       // Sun, 06 Nov 1994 08:49:37 GMT
private let t0Text = "Sun, 06 Nov 1994 08:49:37 GMT"
private let before = "Sun, 06 Nov 1994 08:49:36 GMT"   // one second earlier
private let after = "Sun, 06 Nov 1994 08:49:38 GMT"    // one second later

/// The current version "v1", with its gzip twin, last modified at t0.
private let v1 = CurrentRepresentation(etags: ["\"v1\"", "\"v1-gz\""], lastModified: t0)

private func pre(ifMatch: [String] = [], ifNoneMatch: [String] = [],
                 ims: String? = nil, ius: String? = nil) -> HTTPPreconditions {
    HTTPPreconditions(ifMatch: ifMatch, ifNoneMatch: ifNoneMatch, ifModifiedSince: ims, ifUnmodifiedSince: ius)
}

@Suite(.blockingLane) struct HTTPPreconditionsTests {
    @Test func emptyProceeds() {
        let p = pre()
        #expect(p.isEmpty)
        #expect(p.evaluate(current: v1, isReadMethod: true) == .proceed)
        #expect(p.evaluate(current: nil, isReadMethod: false) == .proceed)
    }

    @Test func isEmptyReflectsPresence() {
        #expect(!pre(ifMatch: ["*"]).isEmpty)
        #expect(!pre(ifNoneMatch: ["garbage"]).isEmpty)
        #expect(!pre(ims: "not a date").isEmpty)
        #expect(!pre(ius: t0Text).isEmpty)
    }

    // MARK: Step 1: If-Match

    @Test func ifMatchStar() {
        #expect(pre(ifMatch: ["*"]).evaluate(current: v1, isReadMethod: false) == .proceed)
        #expect(pre(ifMatch: ["*"]).evaluate(current: nil, isReadMethod: false) == .failed)
    }

    @Test func ifMatchOnAbsentFails() {
        #expect(pre(ifMatch: ["\"v1\""]).evaluate(current: nil, isReadMethod: false) == .failed)
        #expect(pre(ifMatch: ["\"v1\""]).evaluate(current: nil, isReadMethod: true) == .failed)
    }

    @Test func ifMatchList() {
        #expect(pre(ifMatch: ["\"v1\""]).evaluate(current: v1, isReadMethod: false) == .proceed)
        #expect(pre(ifMatch: ["\"v0\""]).evaluate(current: v1, isReadMethod: false) == .failed)
        #expect(pre(ifMatch: ["\"v0\", \"v1\""]).evaluate(current: v1, isReadMethod: false) == .proceed)
        #expect(pre(ifMatch: ["\"v0\"", "\"v1\""]).evaluate(current: v1, isReadMethod: false) == .proceed)
        // If-Match failure is 412 even for GET.
        #expect(pre(ifMatch: ["\"v0\""]).evaluate(current: v1, isReadMethod: true) == .failed)
    }

    @Test func ifMatchAcceptsTheGzipTag() {
        #expect(pre(ifMatch: ["\"v1-gz\""]).evaluate(current: v1, isReadMethod: false) == .proceed)
        let identityOnly = CurrentRepresentation(etags: ["\"v1\""], lastModified: t0)
        #expect(pre(ifMatch: ["\"v1-gz\""]).evaluate(current: identityOnly, isReadMethod: false) == .failed)
    }

    @Test func weakTagNeverSatisfiesIfMatch() {
        #expect(pre(ifMatch: ["W/\"v1\""]).evaluate(current: v1, isReadMethod: false) == .failed)
        #expect(pre(ifMatch: ["W/\"v1\", \"v1-gz\""]).evaluate(current: v1, isReadMethod: false) == .proceed)
    }

    @Test func unparseableIfMatchFails() {
        #expect(pre(ifMatch: ["v1"]).evaluate(current: v1, isReadMethod: false) == .failed)
        #expect(pre(ifMatch: ["*, \"v1\""]).evaluate(current: v1, isReadMethod: false) == .failed)
    }

    @Test func emptyIfMatchListMatchesNothing() {
        #expect(pre(ifMatch: [""]).evaluate(current: v1, isReadMethod: false) == .failed)
    }

    // MARK: Step 2: If-Unmodified-Since

    @Test func ifUnmodifiedSince() {
        #expect(pre(ius: t0Text).evaluate(current: v1, isReadMethod: false) == .proceed)  // equal: not modified since
        #expect(pre(ius: after).evaluate(current: v1, isReadMethod: false) == .proceed)
        #expect(pre(ius: before).evaluate(current: v1, isReadMethod: false) == .failed)
        #expect(pre(ius: before).evaluate(current: v1, isReadMethod: true) == .failed)
    }

    @Test func ifUnmodifiedSinceAcceptsObsoleteForms() {
        #expect(pre(ius: "Sun Nov  6 08:49:36 1994").evaluate(current: v1, isReadMethod: false) == .failed)
        #expect(pre(ius: "Sunday, 06-Nov-94 08:49:37 GMT").evaluate(current: v1, isReadMethod: false) == .proceed)
    }

    @Test func ifUnmodifiedSinceIgnoredWhenInvalidOrAbsentKey() {
        #expect(pre(ius: "yesterday").evaluate(current: v1, isReadMethod: false) == .proceed)
        #expect(pre(ius: "\(before), \(after)").evaluate(current: v1, isReadMethod: false) == .proceed)  // a list
        #expect(pre(ius: before).evaluate(current: nil, isReadMethod: false) == .proceed)
    }

    @Test func ifMatchWinsOverIfUnmodifiedSince() {
        // If-Match holds: the (failing) If-Unmodified-Since is not evaluated.
        #expect(pre(ifMatch: ["\"v1\""], ius: before).evaluate(current: v1, isReadMethod: false) == .proceed)
        #expect(pre(ifMatch: ["*"], ius: before).evaluate(current: v1, isReadMethod: false) == .proceed)
        // If-Match fails: failed regardless of a passing If-Unmodified-Since.
        #expect(pre(ifMatch: ["\"v0\""], ius: after).evaluate(current: v1, isReadMethod: false) == .failed)
        // An invalid If-Match is still "present": it fails and IUS is not consulted.
        #expect(pre(ifMatch: ["nope"], ius: after).evaluate(current: v1, isReadMethod: false) == .failed)
    }

    // MARK: Step 3: If-None-Match

    @Test func ifNoneMatchStarForPut() {
        // Create-only: proceeds when absent, fails when present.
        #expect(pre(ifNoneMatch: ["*"]).evaluate(current: nil, isReadMethod: false) == .proceed)
        #expect(pre(ifNoneMatch: ["*"]).evaluate(current: v1, isReadMethod: false) == .failed)
    }

    @Test func ifNoneMatchStarForGet() {
        #expect(pre(ifNoneMatch: ["*"]).evaluate(current: v1, isReadMethod: true) == .notModified)
        #expect(pre(ifNoneMatch: ["*"]).evaluate(current: nil, isReadMethod: true) == .proceed)
    }

    @Test func ifNoneMatchListGetVersusPut() {
        #expect(pre(ifNoneMatch: ["\"v1\""]).evaluate(current: v1, isReadMethod: true) == .notModified)
        #expect(pre(ifNoneMatch: ["\"v1\""]).evaluate(current: v1, isReadMethod: false) == .failed)
        #expect(pre(ifNoneMatch: ["\"v0\""]).evaluate(current: v1, isReadMethod: true) == .proceed)
        #expect(pre(ifNoneMatch: ["\"v0\""]).evaluate(current: v1, isReadMethod: false) == .proceed)
        #expect(pre(ifNoneMatch: ["\"v0\", \"v1-gz\""]).evaluate(current: v1, isReadMethod: true) == .notModified)
        #expect(pre(ifNoneMatch: ["\"v0\"", "\"v1\""]).evaluate(current: v1, isReadMethod: true) == .notModified)
        // A list on an absent key: nothing matches.
        #expect(pre(ifNoneMatch: ["\"v1\""]).evaluate(current: nil, isReadMethod: true) == .proceed)
    }

    @Test func weakTagSatisfiesIfNoneMatch() {
        #expect(pre(ifNoneMatch: ["W/\"v1\""]).evaluate(current: v1, isReadMethod: true) == .notModified)
        #expect(pre(ifNoneMatch: ["W/\"v1-gz\""]).evaluate(current: v1, isReadMethod: false) == .failed)
    }

    @Test func unparseableIfNoneMatchIsIgnored() {
        #expect(pre(ifNoneMatch: ["v1"]).evaluate(current: v1, isReadMethod: true) == .proceed)
        #expect(pre(ifNoneMatch: ["v1"]).evaluate(current: v1, isReadMethod: false) == .proceed)
        // ...so If-Modified-Since then applies.
        #expect(pre(ifNoneMatch: ["v1"], ims: t0Text).evaluate(current: v1, isReadMethod: true) == .notModified)
    }

    @Test func ifMatchThenIfNoneMatch() {
        // Both pass If-Match; If-None-Match decides.
        #expect(pre(ifMatch: ["\"v1\""], ifNoneMatch: ["\"v1\""]).evaluate(current: v1, isReadMethod: false) == .failed)
        #expect(pre(ifMatch: ["\"v1\""], ifNoneMatch: ["\"v0\""]).evaluate(current: v1, isReadMethod: false) == .proceed)
        // If-Match fails first: 412 even on GET where INM would give 304.
        #expect(pre(ifMatch: ["\"v0\""], ifNoneMatch: ["\"v1\""]).evaluate(current: v1, isReadMethod: true) == .failed)
        // IUS fails before INM would give 304.
        #expect(pre(ifNoneMatch: ["\"v1\""], ius: before).evaluate(current: v1, isReadMethod: true) == .failed)
    }

    // MARK: Step 4: If-Modified-Since

    @Test func ifModifiedSince() {
        #expect(pre(ims: t0Text).evaluate(current: v1, isReadMethod: true) == .notModified)
        #expect(pre(ims: after).evaluate(current: v1, isReadMethod: true) == .notModified)
        #expect(pre(ims: before).evaluate(current: v1, isReadMethod: true) == .proceed)
        #expect(pre(ims: "Sun Nov  6 08:49:37 1994").evaluate(current: v1, isReadMethod: true) == .notModified)
    }

    @Test func ifModifiedSinceOnlyForReads() {
        #expect(pre(ims: after).evaluate(current: v1, isReadMethod: false) == .proceed)
    }

    @Test func ifModifiedSinceIgnoredWhenInvalidOrAbsentKey() {
        #expect(pre(ims: "Sun, 06 Nov 1994 25:00:00 GMT").evaluate(current: v1, isReadMethod: true) == .proceed)
        #expect(pre(ims: "\(t0Text), \(after)").evaluate(current: v1, isReadMethod: true) == .proceed)
        #expect(pre(ims: after).evaluate(current: nil, isReadMethod: true) == .proceed)
    }

    @Test func ifNoneMatchWinsOverIfModifiedSince() {
        // INM passes (no match): IMS, which would say 304, is ignored.
        #expect(pre(ifNoneMatch: ["\"v0\""], ims: after).evaluate(current: v1, isReadMethod: true) == .proceed)
        // INM fails: 304 even though IMS alone would say "modified".
        #expect(pre(ifNoneMatch: ["\"v1\""], ims: before).evaluate(current: v1, isReadMethod: true) == .notModified)
    }
}
