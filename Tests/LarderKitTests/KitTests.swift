import Testing

/// The parent of the LarderKit suites (conformance, timeline, counter
/// worker): they run one test at a time. Several of them write thousands of
/// keys or race hundreds of updates; all at once, next to the rest of the
/// package's tests on a small machine, they starved each other (and the
/// LarderClient suite) until requests took seconds.
@Suite(.serialized, .asyncLane) struct KitTests {}
