import Foundation
import LarderTestSupport
import LarderWire
import Testing

/// openapi.yaml: valid OpenAPI (openapi-spec-validator), complete against
/// docs/http-api.md's endpoints, and true of the server: schemathesis runs a bounded,
/// seeded set of generated requests against a real server and checks every
/// answer's status, content type, headers and body against the document.
@Suite(.blockingLane) struct OpenAPITests {
    static let spec = Repository.path("openapi.yaml")

    /// Described in openapi.yaml as docs/http-api.md has them, not on this server yet
    /// (built in parallel branches). The integrator shrinks this list as they
    /// land: `theNotYetServedListMatchesTheServer` fails, naming the entry to
    /// remove, as soon as the server routes one of them.
    ///  - /faults: the main run fuzzes it on a server started without
    ///    --allow-faults (404s), since rules fuzzed into a live server would
    ///    fault the rest of the run; `schemathesisFindsNothingInFaults`
    ///    fuzzes /faults alone on a server with the flag.
    ///  - The token, CORS and fixtures add no path: when the token lands, a
    ///    run against a server with --token can add `-H "Authorization: Bearer …"`
    ///    and the `ignored_auth` check.
    static let notYetServed: [String] = []

    /// Never fuzzed: GET /events is a stream that does not end (HEAD /events is fuzzed).
    static let neverFuzzedOperationIDs = ["changeFeed"]

    static let modules = [(module: "yaml", package: "pyyaml"),
                          (module: "openapi_spec_validator", package: "openapi-spec-validator")]

    @Test func theDocumentIsValidOpenAPI() throws {
        try PythonRunner.require(Self.modules)
        let code = """
        import sys
        from openapi_spec_validator import validate
        from openapi_spec_validator.readers import read_from_filename
        document, _ = read_from_filename(sys.argv[1])
        validate(document)
        methods = {"get", "head", "put", "post", "patch", "delete", "options"}
        operations = sum(1 for item in document["paths"].values() for m in item if m in methods)
        print(f"valid OpenAPI {document['openapi']}: {len(document['paths'])} paths, {operations} operations")
        """
        let result = try PythonRunner.run(code: code, arguments: [Self.spec])
        #expect(result.status == 0, "\(result.stderr)")
        print("openapi.yaml: " + result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The operations, their security and their error bodies, read from the document.
    static func outline() throws -> [String: Any] {
        try PythonRunner.require(Self.modules)
        let code = """
        import json, sys, yaml
        document = yaml.safe_load(open(sys.argv[1]))
        components = document["components"]
        def resolve(node):
            while isinstance(node, dict) and "$ref" in node:
                section, name = node["$ref"].split("/")[-2:]
                node = components[section][name]
            return node
        methods = {"get", "head", "put", "post", "patch", "delete", "options"}
        operations = {}
        untyped_errors = []
        for path, item in document["paths"].items():
            for method, operation in item.items():
                if method not in methods:
                    continue
                operations[f"{method.upper()} {path}"] = {
                    "open": operation.get("security", None) == [],
                    "statuses": sorted(operation["responses"]),
                }
                for status, response in operation["responses"].items():
                    response = resolve(response)
                    content = response.get("content", {})
                    if status.startswith(("4", "5")) and method != "head":
                        schema = content.get("application/json", {}).get("schema", {})
                        if schema.get("$ref") != "#/components/schemas/Error":
                            untyped_errors.append(f"{method.upper()} {path} {status}")
        print(json.dumps({"operations": operations, "security": document.get("security"),
                          "untypedErrors": untyped_errors}))
        """
        let result = try PythonRunner.run(code: code, arguments: [Self.spec])
        guard result.status == 0, let outline = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
            throw ClientError("could not read openapi.yaml: \(result.stderr)")
        }
        return outline
    }

    /// Every endpoint and method of docs/http-api.md is in the document; the token
    /// is asked for everywhere but /healthz and the viewer; every error
    /// answer (but HEAD's, which have no body) is the JSON `Error`.
    @Test func everyEndpointOfTheContractIsDescribed() throws {
        let outline = try Self.outline()
        let operations = outline["operations"] as? [String: [String: Any]] ?? [:]
        let contract = [
            "GET /store/{key}", "HEAD /store/{key}", "PUT /store/{key}", "DELETE /store/{key}",
            "POST /store/{key}", "PATCH /store/{key}",
            "GET /store/", "DELETE /store/", "POST /store/",
            "GET /store/{prefix}/", "DELETE /store/{prefix}/", "POST /store/{prefix}/",
            "GET /events", "GET /snapshot", "POST /snapshot",
            "GET /faults", "PUT /faults", "POST /faults", "DELETE /faults", "GET /journal", "DELETE /journal",
            "GET /clock", "POST /clock", "DELETE /clock",
            "GET /healthz", "GET /metrics", "GET /", "GET /viewer/", "GET /viewer/{file}",
        ]
        for operation in contract {
            #expect(operations[operation] != nil, "openapi.yaml does not describe \(operation)")
        }
        let open = Set(operations.filter { $0.value["open"] as? Bool == true }.keys)
        #expect(open == ["GET /healthz", "HEAD /healthz", "GET /", "GET /viewer/", "GET /viewer/{file}"], "\(open.sorted())")
        #expect((outline["security"] as? [[String: Any]])?.first?["bearer"] != nil, "the bearer token is not the global security")
        #expect((outline["untypedErrors"] as? [String] ?? []).isEmpty, "error answers without the Error schema: \(outline["untypedErrors"] ?? [])")
        // Every operation that takes a token documents its 401.
        for (name, operation) in operations where operation["open"] as? Bool != true {
            #expect((operation["statuses"] as? [String] ?? []).contains("401"), "\(name) does not document 401")
        }
    }

    /// Each not-yet-served path is really unrouted here (the route table's
    /// 404 "no endpoint at"); one that the server now serves must leave the list.
    @Test func theNotYetServedListMatchesTheServer() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        for path in Self.notYetServed {
            let response = try client.send("GET", path)
            let unrouted = response.status == 404 && response.text.contains("no endpoint at \(path)")
            #expect(unrouted, "the server routes \(path) now (\(response.status)): remove it from OpenAPITests.notYetServed")
        }
    }
}
