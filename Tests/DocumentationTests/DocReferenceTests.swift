import Foundation
import Testing
import LarderTestSupport

/// What ARCHITECTURE.md and docs/*.md name in backticks is true of the
/// tree: a repository path (`Sources/LarderApp/Server/APIRoutes.swift`,
/// `Benchmarks/run.sh`, `LarderDiskStore/Index`) is a file or folder, a bare
/// file name (`GroupCommit.swift`) is a file somewhere, and a type name
/// (`StoreChoice`, `HTTPResponder.observe(with:)`) is declared in the
/// package's Swift code or is a target, a name the server sends, or one of
/// the few outside names below. Files move and types get renamed; the map
/// must move with them. Only inline code in prose and tables counts, not
/// fenced blocks.
@Suite(.blockingLane) struct DocReferenceTests {
    @Test func everyNamedPathAndTypeExists() throws {
        let files = DocExample.markdownFiles.filter { $0 == "ARCHITECTURE.md" || $0.hasPrefix("docs/") }
        #expect(files.contains("ARCHITECTURE.md") && files.contains("docs/design.md"), "\(files)")
        let tree = try Tree(root: Repository.root)
        var checked = 0
        for file in files {
            let result = try Self.staleReferences(in: Repository.path(file), tree: tree)
            for problem in result.problems {
                Issue.record("\(file):\(problem)")
            }
            checked += result.checked
        }
        // About 700 when this was written: a rule that stops matching shows here.
        #expect(checked > 500, "only \(checked) references checked")
    }

    /// The checker finds what it must: a missing path, a missing module
    /// folder, a missing bare file name, a file beside the repository (it
    /// exists, but a clone does not have it) and an unknown type; and lets
    /// existing ones, placeholders, globs, build outputs, outside names,
    /// words that are no type and anything in a fenced block pass.
    @Test func theCheckerReportsStaleReferencesAndOnlyThose() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let repository = dir + "/repository"
        for folder in ["Sources/Thing/Parts", "Tests/ThingTests", "docs"] {
            try FileManager.default.createDirectory(atPath: repository + "/" + folder, withIntermediateDirectories: true)
        }
        func write(_ text: String, _ path: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: repository + "/" + path))
        }
        try write(#"let package = Package(name: "T", targets: [.target(name: "Thing"), .testTarget(name: "ThingTests")])"#,
                  "Package.swift")
        try write("struct RealType {}\nextension RealType { enum Inner {} }\n" + #"let code = "NoSuchThing""#,
                  "Sources/Thing/Parts/Real.swift")
        try write("final class RealTypeTests {}\n", "Tests/ThingTests/RealTypeTests.swift")
        try write("Notes beside the repository.\n", "../NOTES.md")
        let page = """
            # Page

            Fine: `Sources/Thing/Parts/Real.swift`, `Sources/Thing/` and
            `bash docs/page.md --flag`, `Thing/Parts`, `Real.swift`, `RealType`,
            `RealType.Inner`, `RealType.make(with:)`, `RealTypeTests`, `ThingTests`,
            `NoSuchThing` (a string the code sends), `URLSession` (from outside).
            Skipped: `<data>/ns/<name>/`, `Sources/*.swift`, `Fuzz/.build/fuzz`,
            `GET`, `Range`, `COMMIT`, `--store postgres://x/y.sh`, `bench/run.sh`.

            ```
            `Sources/Gone.swift` `GoneType`
            ```
            | gone | `Sources/Thing/Gone.swift` | `docs/gone/` |
            `OtherType.member` and `Thing/Gone`, `Gone.swift`, `python3 Tests/gone.py URL`, `../NOTES.md`.
            """
        try write(page, "docs/page.md")
        let result = try Self.staleReferences(in: repository + "/docs/page.md", tree: Tree(root: repository))
        let expected = ["`Sources/Thing/Gone.swift`", "`docs/gone/`", "`OtherType`", "`Thing/Gone`", "`Gone.swift`", "`Tests/gone.py`",
                        "`../NOTES.md`"]
        #expect(result.problems.count == expected.count, "\(result.problems)")
        for name in expected {
            #expect(result.problems.contains { $0.contains(name) }, "\(name) not reported: \(result.problems)")
        }
        #expect(result.problems.allSatisfy { $0.hasPrefix("13:") || $0.hasPrefix("14:") }, "\(result.problems)")
        #expect(result.checked == 12 + expected.count, "\(result.checked) checked")
    }

    // MARK: - The rules

    /// Where repository paths start.
    static let pathPrefixes = ["Sources/", "Tests/", "Public/", "docs/", "Benchmarks/", ".ci/", "Fuzz/", "clients/", "docker/"]
    /// What a file the docs name ends in; with a `/` in it, a word is a
    /// repository path, without one a file name found somewhere in the tree.
    static let fileSuffixes = [".swift", ".md", ".py", ".sh", ".yml", ".yaml", ".js"]
    /// A word with one of these is a pattern, not a path: `<data>/ns/<name>/`,
    /// `Sources/*.swift`, `bench/…`, `$HOME/x`.
    static let placeholderMarks: [Character] = ["<", "*", "…", "$"]
    /// Folders that hold what a build or a run makes (in .gitignore), so a
    /// path in them is there only after that run: `Fuzz/.build/http-parser-fuzz`,
    /// `Fuzz/.work/corpus`.
    static func isOutput(_ segment: Substring) -> Bool { segment.hasPrefix(".build") || segment == ".work" }
    /// Folders that are gone on purpose: docs/performance-history.md names
    /// the scripts older figures were made with, under `bench/`, beside
    /// what replaced them under `Benchmarks/`.
    static let formerFolders = ["bench/"]
    /// A single-capital UpperCamelCase word is a type only with one of
    /// these endings (`Route`, `LayeredStore`); `Range`, `Host`, `Data`,
    /// `Bodies` are header names, Foundation's, folder names.
    static let typeSuffixes = ["Store", "Stores", "Route", "Routes", "Tests", "Options", "Sink", "Reply", "Index", "Cache", "Hub"]
    /// Type names from outside the package that the docs name, by where
    /// they come from. (Header names, S3's error codes and operation names
    /// need no entry: the server's sources spell them as string literals.)
    static let outsideNames: Set<String> = [
        // Swift, Foundation, Dispatch: what Larder is built on or compared with.
        "AsyncSequence", "AsyncThrowingStream", "ManagedBuffer", "JSONEncoder", "JSONDecoder",
        "URLSession", "URLSessionConfiguration", "DispatchSource",
        // swift-log: what an app bootstraps.
        "LoggingSystem",
        // The browser's client of server-sent events.
        "EventSource",
        // /proc/<pid>/status: the resident memory figure.
        "VmRSS",
        // Python's http.client and urllib3: what a client sees of a network fault.
        "ProtocolError", "IncompleteRead",
        // The AWS SDKs: Go's path-style option, boto3's transfer settings and a metadata field.
        "UsePathStyle", "TransferConfig", "ContentDisposition",
    ]

    // MARK: - The checker

    /// What the docs may name: the files and folders of a repository, its
    /// targets and the types its Swift code declares.
    struct Tree {
        let root: String
        /// Every file's name, anywhere (build outputs and .git aside).
        let fileNames: Set<String>
        /// The target names of Package.swift.
        let targets: Set<String>
        /// Every type declared (or extended) in Sources/, Tests/, Fuzz/ and Plugins/.
        let declaredTypes: Set<String>
        /// What Sources/ spells as a whole string literal of letters, digits
        /// and `-`: the header names, error codes and operation names the
        /// server sends (`"ETag"`, `"NoSuchKey"`, `"PutObject"`).
        let quotedWords: Set<String>

        init(root: String) throws {
            self.root = root
            var names: Set<String> = [], types: Set<String> = [], quoted: Set<String> = []
            func walk(_ relative: String) throws {
                for entry in try FileManager.default.contentsOfDirectory(atPath: root + "/" + relative) {
                    if entry.hasPrefix(".build") || [".git", ".swiftpm", "node_modules", "__pycache__"].contains(entry) { continue }
                    let path = relative.isEmpty ? entry : relative + "/" + entry
                    // Not through a link: its own type (a link to a folder is a name, not a walk).
                    let type = try FileManager.default.attributesOfItem(atPath: root + "/" + path)[.type] as? FileAttributeType
                    if type == .typeDirectory {
                        try walk(path)
                        continue
                    }
                    names.insert(entry)
                    guard entry.hasSuffix(".swift"), ["Sources/", "Tests/", "Fuzz/", "Plugins/"].contains(where: { path.hasPrefix($0) }),
                          let data = FileManager.default.contents(atPath: root + "/" + path) else { continue }
                    let bytes = [UInt8](data)
                    Self.declarations(in: bytes, into: &types)
                    if path.hasPrefix("Sources/") { Self.quotedWords(in: bytes, into: &quoted) }
                }
            }
            try walk("")
            fileNames = names
            declaredTypes = types
            quotedWords = quoted
            let manifest = try String(contentsOfFile: root + "/Package.swift", encoding: .utf8)
            targets = Set(manifest.matches(of: /\.(?:target|testTarget|executableTarget|systemLibrary|plugin)\(\s*name:\s*"([A-Za-z0-9_]+)"/)
                .map { String($0.output.1) })
        }

        func exists(_ relative: String) -> Bool {
            FileManager.default.fileExists(atPath: root + "/" + relative)
        }

        static let declarers: Set<String> = ["struct", "class", "enum", "protocol", "actor", "typealias", "extension"]

        static func isWordByte(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
        }

        /// Adds the word after each `struct`, `class`, `enum`, `protocol`,
        /// `actor`, `typealias` and `extension` of Swift source. (A byte scan:
        /// a regex over 3 MB of tests takes seconds in a debug build.)
        static func declarations(in bytes: [UInt8], into types: inout Set<String>) {
            var afterDeclarer = false
            var index = 0
            while index < bytes.count {
                guard isWordByte(bytes[index]) else {
                    index += 1
                    continue
                }
                let start = index
                while index < bytes.count, isWordByte(bytes[index]) { index += 1 }
                let word = String(decoding: bytes[start..<index], as: UTF8.self)
                if afterDeclarer { types.insert(word) }
                afterDeclarer = declarers.contains(word)
            }
        }

        /// Adds what stands between two quotes on one line when it is only
        /// letters, digits and `-`.
        static func quotedWords(in bytes: [UInt8], into words: inout Set<String>) {
            var open: Int?
            for index in bytes.indices {
                switch bytes[index] {
                case 0x0A: open = nil
                case 0x22:
                    if let start = open, index > start + 1,
                       bytes[(start + 1)..<index].allSatisfy({ isWordByte($0) && $0 != 0x5F || $0 == 0x2D }) {
                        words.insert(String(decoding: bytes[(start + 1)..<index], as: UTF8.self))
                    }
                    open = index
                default: break
                }
            }
        }
    }

    /// The stale references of the Markdown file at `path`, each as
    /// "line: `token`: why", and how many references it checked.
    static func staleReferences(in path: String, tree: Tree) throws -> (problems: [String], checked: Int) {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var problems: [String] = []
        var checked = 0
        for (number, line) in proseLines(of: text) {
            for span in line.matches(of: /`([^`]+)`/) {
                let token = span.output.1.trimmingCharacters(in: .whitespaces)
                for word in token.split(separator: " ") {
                    switch check(word: word, tree: tree) {
                    case .notAPath: continue
                    case .exists: checked += 1
                    case .missing(let path, let why):
                        checked += 1
                        problems.append("\(number): `\(path)`: \(why)")
                    }
                }
                guard let name = typeName(in: token) else { continue }
                checked += 1
                let known = tree.declaredTypes.contains(name) || tree.targets.contains(name)
                    || tree.quotedWords.contains(name) || outsideNames.contains(name)
                if !known {
                    problems.append("\(number): `\(name)`: declared nowhere in the package, not a target, "
                                    + "not a string the server sends, not in outsideNames")
                }
            }
        }
        return (problems, checked)
    }

    enum PathCheck {
        case notAPath
        case exists
        case missing(String, why: String)
    }

    /// Whether `word` (a word of inline code) is a path or a file name,
    /// and if so whether the tree has it.
    static func check(word rawWord: Substring, tree: Tree) -> PathCheck {
        let word = rawWord.hasPrefix("./") ? rawWord.dropFirst(2) : rawWord
        if word.contains("://") || word.hasPrefix("/") || word.hasPrefix("-") || word.contains(where: { placeholderMarks.contains($0) }) {
            return .notAPath
        }
        let segments = word.split(separator: "/")
        guard let first = segments.first else { return .notAPath }
        let hasFileSuffix = fileSuffixes.contains { word.hasSuffix($0) }
        let isPath = pathPrefixes.contains { word.hasPrefix($0) } || (hasFileSuffix && word.contains("/"))
        // `LarderDiskStore/Index`: a folder of a module.
        let isModulePath = !isPath && segments.count > 1 && tree.targets.contains(String(first))
        if isPath || isModulePath {
            if segments.contains(where: isOutput) || formerFolders.contains(where: { word.hasPrefix($0) }) { return .notAPath }
            let relative = String(word.hasSuffix("/") ? word.dropLast() : word)
            // The docs travel with the repository; what is beside it does not.
            if segments.contains("..") { return .missing(String(word), why: "outside the repository") }
            if isPath { return tree.exists(relative) ? .exists : .missing(String(word), why: "no such file or folder") }
            return tree.exists("Sources/" + relative) || tree.exists("Tests/" + relative) ? .exists
                : .missing(String(word), why: "no such file or folder in a module (under Sources/ or Tests/)")
        }
        guard hasFileSuffix, word.wholeMatch(of: /[A-Za-z0-9_.+-]+/) != nil else { return .notAPath }
        return tree.fileNames.contains(String(word)) ? .exists : .missing(String(word), why: "no file of that name in the repository")
    }

    /// The type a token names, when it is one: an UpperCamelCase word with
    /// at least two capitals or a known ending, alone or with members,
    /// calls and argument labels (`ValueUpload.Encoding`,
    /// `HTTPResponder.respond(after:)`, `LarderConfiguration(storeDescription:openStore:)`),
    /// and no file name (`Middleware.swift`). Only the type is returned.
    static func typeName(in token: String) -> String? {
        if fileSuffixes.contains(where: { token.hasSuffix($0) }) { return nil }
        guard let match = token.wholeMatch(of: /([A-Z][A-Za-z0-9]*)(?:\([^)]*\))?(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\([^)]*\))?)*/) else {
            return nil
        }
        let name = String(match.output.1)
        guard name.contains(where: \.isLowercase) else { return nil }  // GET, COMMIT, SHA256
        let capitals = name.filter(\.isUppercase).count
        return capitals >= 2 || typeSuffixes.contains(where: { name.hasSuffix($0) }) ? name : nil
    }

    /// The lines of Markdown text outside fenced code blocks, numbered from 1.
    static func proseLines(of text: String) -> [(number: Int, line: Substring)] {
        var inFence = false
        var lines: [(Int, Substring)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                inFence.toggle()
                continue
            }
            if !inFence { lines.append((index + 1, line)) }
        }
        return lines
    }
}
