import Foundation
import LarderTestSupport
import LarderWire
import Testing

/// openapi.yaml: valid OpenAPI (openapi-spec-validator), complete against
/// docs/http-api.md's endpoints, and true of the server: schemathesis runs a bounded,
/// seeded set of generated requests against a real server and checks every
/// answer's status, content type, headers and body against the document.
@Suite struct OpenAPITests {
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

    /// schemathesis against a real server: a fixed seed, derandomized
    /// generation (no example database), one worker, the phases that need no links (examples, coverage,
    /// fuzzing), and these checks on every answer. `?wait` is clamped to 1 s
    /// by Tests/openapi/schemathesis_hooks.py so that no case parks for minutes.
    /// The server has no fault rules, so /faults answers 404 here.
    @Test(.timeLimit(.minutes(5))) func schemathesisFindsNothing() async throws {
        let server = try TestServer()
        defer { server.stop() }
        var filters: [String] = []
        for path in Self.notYetServed { filters += ["--exclude-path", path] }
        for id in Self.neverFuzzedOperationIDs { filters += ["--exclude-operation-id", id] }
        try await Self.schemathesis(against: server, filters: filters, label: "schemathesis", timeout: 240)
    }

    /// The /faults operations fuzzed against a server started with
    /// --allow-faults: the rule sets, their validation and their views. Only
    /// /faults is run: the rules it writes fault every other path, but never
    /// /faults itself.
    @Test(.timeLimit(.minutes(5))) func schemathesisFindsNothingInFaults() async throws {
        let server = try TestServer { $0.allowFaults = true }
        defer { server.stop() }
        try await Self.schemathesis(against: server, filters: ["--include-path", "/faults"],
                              label: "schemathesis /faults", timeout: 200)
        // The route was there all along (not a run of 404s), and still answers.
        let response = try server.client().send("GET", "/faults")
        #expect(response.status == 200, "GET /faults after the run: \(response.status) \(response.text)")
    }

    /// Runs schemathesis with the settings above against `server`, limited
    /// by `filters` (schemathesis's operation filters), and expects it to
    /// pass every generated case within `timeout` seconds.
    static func schemathesis(against server: TestServer, filters: [String], label: String, timeout: Double) async throws {
        try PythonRunner.require([(module: "schemathesis", package: "schemathesis")])
        let workDirectory = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: workDirectory) }
        let arguments = [
            "-m", "schemathesis.cli", "run", Self.spec,
            "--url", "http://127.0.0.1:\(server.port)",
            "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance",
            "--phases", "examples,coverage,fuzzing",
            "--max-examples", "30",
            "--seed", "20261122",
            // Derandomized: the same cases every run (and so no example database).
            "--generation-deterministic",
            "--workers", "1",
            "--request-timeout", "15",
            "--no-color",
        ] + filters
        let started = Date()
        let result = try await PythonRunner.run(arguments, environment: [
            "SCHEMATHESIS_HOOKS": Repository.path("Tests/openapi/schemathesis_hooks.py"),
            "NO_COLOR": "1",
        ], directory: workDirectory, timeout: timeout)
        let seconds = Date().timeIntervalSince(started)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let cases = lines.first { $0.contains(" generated,") }?.trimmingCharacters(in: .whitespaces) ?? "?"
        let summary = lines.last { $0.hasPrefix("=") && $0.contains(" in ") }?
            .trimmingCharacters(in: CharacterSet(charactersIn: "= ")) ?? "?"
        print("\(label): \(cases); \(summary) (\(String(format: "%.0f", seconds)) s in all)")
        #expect(!result.timedOut, "\(label) did not finish in \(Int(timeout)) s")
        #expect(result.status == 0, "\(label) exited \(result.status):\n\(lines.suffix(150).joined(separator: "\n"))\n\(result.stderr)")
        #expect(cases.contains(" passed") && !cases.contains("failed"), "\(label): \(cases)")
    }
}
