import LarderModel
import LarderHTTP
import LarderRouting
import LarderJSON

/// `/faults` (only with `--allow-faults`; otherwise `FaultsOffRoute`
/// answers 404 naming the flag):
///
/// - `PUT` replaces the rules with a JSON array of rules, or with
///   `{"rules": [...], "seed": N}` to make the probability and jitter draws
///   repeatable;
/// - `POST` appends one rule (an object) or several (an array) after the
///   current ones, whose counters go on;
/// - `GET` shows the rules with their names, remaining counts and how often
///   each matched and fired; `DELETE` removes them all (`{"deleted": N}`).
///
/// A body that is not JSON is 400 `invalid_json`; a rule that breaks a rule
/// (an unknown field, a value out of range) is 400 `invalid_rule` and
/// changes nothing.
struct FaultsRoute: Route {
    let book: FaultBook

    static let methods = "GET, HEAD, PUT, POST, DELETE, OPTIONS"
    static let maxBody = 1 << 20

    func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        switch request.method {
        case .get, .head:
            return .respond(.json(.ok, book.list))
        case .delete:
            return .respond(.json(.ok, DeletedCount(deleted: book.clear())))
        case .put, .post:
            let replace = request.method == .put
            let book = book
            return .receiveBody(BufferedBodySink(limit: Self.maxBody, what: "a fault rule body", responder: request.responder) {
                bytes throws(HTTPError) in
                let document: JSONValue
                do throws(JSONParseError) {
                    document = try JSONValue.parse(bytes)
                } catch {
                    throw HTTPError(.badRequest, .invalidJSON, "the rules are not JSON: \(error.message)")
                }
                if replace {
                    let (rules, seed) = try Self.ruleSet(document)
                    try book.replace(with: rules, seed: seed)
                } else {
                    try book.append(try Self.rules(document, single: true))
                }
                return .json(.ok, book.list)
            })
        case .options:
            return .respond(HTTPResponse(status: .noContent, headers: [("Allow", Self.methods)]))
        default:
            throw HTTPError(.methodNotAllowed, .methodNotAllowed, "\(request.method) is not allowed on /faults",
                            headers: [("Allow", Self.methods)])
        }
    }

    /// A `PUT` body: an array of rules, or `{"rules": [...], "seed": N}`.
    static func ruleSet(_ document: JSONValue) throws(HTTPError) -> ([FaultRule], UInt64?) {
        guard case .object(let members) = document else { return (try rules(document, single: false), nil) }
        var rules: [FaultRule]?
        var seed: UInt64?
        for (key, value) in members {
            switch key {
            case "rules":
                guard case .array = value else { throw invalid("\"rules\" must be an array of rules") }
                rules = try Self.rules(value, single: false)
            case "seed":
                guard case .number(let text) = value, let s = UInt64(text) else {
                    throw invalid("\"seed\" must be a whole number from 0 to \(UInt64.max)")
                }
                seed = s
            default:
                throw invalid("unknown field \(JSON.quote(key)); PUT /faults takes an array of rules, or {\"rules\": [...], \"seed\": N}")
            }
        }
        guard let rules else { throw invalid("PUT /faults takes an array of rules, or {\"rules\": [...], \"seed\": N}") }
        return (rules, seed)
    }

    /// An array of rules; with `single`, a lone rule object too (`POST`).
    static func rules(_ document: JSONValue, single: Bool) throws(HTTPError) -> [FaultRule] {
        switch document {
        case .array(let items):
            guard items.count <= FaultBook.maxRules else { throw invalid("at most \(FaultBook.maxRules) rules may be in force") }
            var rules: [FaultRule] = []
            for (i, item) in items.enumerated() { rules.append(try FaultRule(json: item, position: i + 1)) }
            return rules
        case .object where single:
            return [try FaultRule(json: document, position: 1)]
        default:
            throw invalid(single ? "POST /faults takes a rule object or an array of rules" : "the rules must be a JSON array")
        }
    }

    private static func invalid(_ message: String) -> HTTPError {
        HTTPError(.badRequest, .invalidRule, message)
    }
}
