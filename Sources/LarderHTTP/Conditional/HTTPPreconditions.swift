/// The state a precondition is evaluated against: the current version of the
/// target resource's selected representation.
public struct CurrentRepresentation: Sendable, Equatable {
    /// Every strong entity tag, quoted (e.g. `["\"v1\"", "\"v1-gz\""]`), the
    /// current version answers to. Larder gives each encoding of a version its
    /// own tag, and a conditional request may name either, so all of them are
    /// listed. A string that is not a valid entity tag never matches.
    public let etags: [String]
    /// Last modification time, seconds since 1970.
    public let lastModified: Int64

    public init(etags: [String], lastModified: Int64) {
        self.etags = etags
        self.lastModified = lastModified
    }
}

/// What the server should do after evaluating the preconditions.
public enum PreconditionOutcome: Sendable, Equatable {
    /// All preconditions hold (or none were sent): perform the method.
    case proceed
    /// `304 Not Modified`; only ever produced for GET/HEAD.
    case notModified
    /// `412 Precondition Failed`.
    case failed
}

/// The conditional header fields of one request (RFC 9110 section 13.1), and
/// their evaluation in the order of RFC 9110 section 13.2.2.
///
/// Call ``evaluate(current:isReadMethod:)`` where the request would otherwise
/// succeed: RFC 9110 section 13.2.1 has a server ignore preconditions when the
/// response without them would be neither 2xx nor 412 (e.g. a 400 for a bad
/// body). `If-Range` is not handled here; see
/// ``ByteRangeRequest/ifRangeAllows(_:currentETags:lastModified:)``.
///
/// Two choices the RFC leaves to the server:
/// - An `If-Match` that cannot be parsed makes the request fail (412). The
///   client asked for a guarded write; performing it unguarded could lose an
///   update, while refusing it is always safe.
/// - An `If-None-Match` that cannot be parsed is ignored, as if absent (so
///   `If-Modified-Since` then applies to GET/HEAD). Ignoring it at worst sends
///   a full 200 instead of a 304, or performs a write the client might have
///   wanted to make conditional on absence; the latter matches how RFC 9110
///   treats other invalid conditionals (invalid dates are ignored).
public struct HTTPPreconditions: Sendable {
    /// One entity-tag field as received.
    enum TagField: Sendable, Equatable {
        case absent
        case invalid
        case present(EntityTagCondition)

        init(_ values: [String]) {
            if values.isEmpty {
                self = .absent
            } else if let condition = EntityTagCondition.parse(values) {
                self = .present(condition)
            } else {
                self = .invalid
            }
        }
    }

    let ifMatch: TagField
    let ifNoneMatch: TagField
    /// Parsed dates; nil when absent or not a valid HTTP-date (both mean
    /// "ignore": RFC 9110 sections 13.1.3 and 13.1.4).
    let ifModifiedSince: Int64?
    let ifUnmodifiedSince: Int64?

    /// Whether the request carried none of the four fields, so the caller can
    /// skip looking up validators.
    public let isEmpty: Bool

    /// Builds the preconditions from the request's header values.
    ///
    /// - Parameters:
    ///   - ifMatch: the value of every `If-Match` field line, in order; empty
    ///     when the header is absent.
    ///   - ifNoneMatch: likewise for `If-None-Match`.
    ///   - ifModifiedSince: the `If-Modified-Since` value, nil when absent. If
    ///     the field was repeated, pass the lines joined with `", "`: a list
    ///     of dates is not a valid HTTP-date and is then ignored, as RFC 9110
    ///     section 13.1.3 requires.
    ///   - ifUnmodifiedSince: likewise for `If-Unmodified-Since`.
    public init(ifMatch: [String], ifNoneMatch: [String], ifModifiedSince: String?, ifUnmodifiedSince: String?) {
        self.ifMatch = TagField(ifMatch)
        self.ifNoneMatch = TagField(ifNoneMatch)
        self.ifModifiedSince = ifModifiedSince.flatMap(HTTPDate.parse)
        self.ifUnmodifiedSince = ifUnmodifiedSince.flatMap(HTTPDate.parse)
        self.isEmpty = ifMatch.isEmpty && ifNoneMatch.isEmpty && ifModifiedSince == nil && ifUnmodifiedSince == nil
    }

    /// Evaluates the preconditions in RFC 9110 section 13.2.2 order.
    ///
    /// 1. `If-Match`: `*` holds iff a current representation exists; a list
    ///    holds iff a listed tag strong-matches one of the current tags (so a
    ///    weak tag never matches). False → ``PreconditionOutcome/failed``.
    ///    An unparseable `If-Match` counts as false.
    /// 2. Otherwise `If-Unmodified-Since` (valid date, current exists): a
    ///    representation modified after the date → `failed`.
    /// 3. `If-None-Match`: `*` is false iff a current representation exists; a
    ///    list is false iff a listed tag weak-matches one of the current tags.
    ///    False → ``PreconditionOutcome/notModified`` for GET/HEAD, `failed`
    ///    otherwise. An unparseable `If-None-Match` is treated as absent.
    /// 4. Otherwise, for GET/HEAD, `If-Modified-Since` (valid date, current
    ///    exists): not modified after the date → `notModified`.
    ///
    /// RFC 9110 also lets a server answer 2xx instead of 412 when a failed
    /// state-changing request "appears to have already been applied"; that
    /// needs knowledge of the request body and is left to the caller.
    ///
    /// - Parameters:
    ///   - current: the current representation, or nil when there is none
    ///     (the key is absent or expired).
    ///   - isReadMethod: true for GET and HEAD, which get 304 where other
    ///     methods get 412.
    public func evaluate(current: CurrentRepresentation?, isReadMethod: Bool) -> PreconditionOutcome {
        // Parse the current tags once; unparseable ones are dropped and so
        // never match.
        let currentTags = current.map { $0.etags.compactMap(EntityTag.init) }

        // Step 1 / 2: If-Match, else If-Unmodified-Since.
        switch ifMatch {
        case .invalid:
            return .failed
        case .present(let condition):
            if !condition.matches(currentTags, strong: true) { return .failed }
        case .absent:
            // RFC 9110 13.1.4: ignored when there is no current representation
            // (nothing has a modification date) or the date is invalid.
            if let date = ifUnmodifiedSince, let current, current.lastModified > date {
                return .failed
            }
        }

        // Step 3 / 4: If-None-Match, else If-Modified-Since.
        switch ifNoneMatch {
        case .present(let condition):
            if condition.matches(currentTags, strong: false) {
                return isReadMethod ? .notModified : .failed
            }
        case .absent, .invalid:
            // RFC 9110 13.1.3: only for GET/HEAD, only with a valid date and a
            // representation that has a modification date.
            if isReadMethod, let date = ifModifiedSince, let current, current.lastModified <= date {
                return .notModified
            }
        }
        return .proceed
    }
}

extension HTTPPreconditions {
    /// A request's four precondition fields; nil when it has none (the
    /// common case, found without a look at any field's value). Both faces
    /// read them so (the Larder API's values, S3's objects).
    /// `withDates: false`: only the entity-tag fields (S3's PutObject).
    public static func of(_ head: HTTPRequestHead, withDates: Bool = true) -> HTTPPreconditions? {
        guard head.headers.containsName(startingWith: "if-") else { return nil }
        let p = HTTPPreconditions(ifMatch: head.headers.values("If-Match"), ifNoneMatch: head.headers.values("If-None-Match"),
                                  ifModifiedSince: withDates ? head.headers["If-Modified-Since"] : nil,
                                  ifUnmodifiedSince: withDates ? head.headers["If-Unmodified-Since"] : nil)
        return p.isEmpty ? nil : p
    }
}
