import Foundation
import LarderTestSupport
import Testing

/// Every top-level suite names the lane its tests run in: `.blockingLane`
/// or `.longBlockingLane` (bodies that block, off Swift's cooperative pool) or `.asyncLane` (async
/// bodies that never block). A suite added without either puts blocking
/// bodies back on the cooperative pool, where two of them stall every async
/// test of a full run; that shows up only as a rare timeout under load, so
/// it is caught here instead. Targets of pure computation (no socket, disk,
/// process or sleep) are exempt.
@Suite(.blockingLane) struct SuiteLaneTests {
    static let exemptTargets: Set<String> = ["LarderJSONTests", "LarderModelTests", "LarderStorageTests"]

    @Test func everySuiteNamesItsLane() throws {
        var checked = 0
        for file in try Self.testFiles() {
            let text = try String(contentsOfFile: Repository.path(file), encoding: .utf8)
            for problem in Self.suitesWithoutALane(in: text) {
                Issue.record("\(file): \(problem) names no lane (.blockingLane, .longBlockingLane or .asyncLane)")
            }
            checked += 1
        }
        #expect(checked > 100, "only \(checked) test files found")
    }

    @Test func theCheckFindsASuiteWithoutALane() {
        let text = """
            @Suite(.blockingLane) struct Good {}
            @Suite("Named", .asyncLane) struct AlsoGood {}
            @Suite(.longBlockingLane, .serialized) struct LongGood {}
            @Suite struct Bare {}
            @Suite(.serialized) struct OnlySerialized {}
            @Suite(.enabled(if: true,
                            "a reason"), .blockingLane)
            struct OverTwoLines {}
            @Suite(.enabled(if: true,
                            "a reason"))
            struct OverTwoLinesWithout {}
            struct ImplicitTests {
                @Test func x() {}
            }
            extension Good {
                @Suite struct Nested {}
            }
            """
        #expect(Self.suitesWithoutALane(in: text) == ["Bare", "OnlySerialized", "OverTwoLinesWithout", "ImplicitTests"])
    }

    /// Names of the top-level suites in `text` without a lane: an
    /// `@Suite` at the start of a line, or an unattributed type at the
    /// start of a line whose name ends in `Tests`. (Nested suites take the
    /// lane of the suite they are in: the traits are recursive.)
    static func suitesWithoutALane(in text: String) -> [String] {
        var missing: [String] = []
        var attribute: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("@Suite") {
                attribute = line
            } else if let open = attribute, line.first == " " {
                attribute = open + line  // an attribute over several lines
            }
            guard let name = Self.topLevelTypeName(line) else {
                if !line.hasPrefix("@") && line.first != " " { attribute = nil }
                continue
            }
            if let attribute {
                if ![".blockingLane", ".longBlockingLane", ".asyncLane"].contains(where: attribute.contains) { missing.append(name) }
            } else if name.hasSuffix("Tests") && text.contains("@Test") {
                missing.append(name)
            }
            attribute = nil
        }
        return missing
    }

    /// The type a line declares at the top level (column 0), if any: a
    /// line that starts with the declaration, or an `@Suite(...)` line that
    /// ends in it.
    static func topLevelTypeName(_ line: String) -> String? {
        guard line.hasPrefix("@Suite") || line.first?.isLetter == true else { return nil }
        let declaration = /(?:^|\) |@Suite )(?:final class|class|struct|enum) ([A-Za-z_][A-Za-z0-9_]*)/
        guard let match = line.firstMatch(of: declaration) else { return nil }
        return String(match.1)
    }

    /// The Swift files of every test target that is not exempt, relative to the repository.
    static func testFiles() throws -> [String] {
        let tests = Repository.path("Tests")
        var files: [String] = []
        for target in try FileManager.default.contentsOfDirectory(atPath: tests).sorted()
        where target.hasSuffix("Tests") && !exemptTargets.contains(target) {
            let enumerator = FileManager.default.enumerator(atPath: tests + "/" + target)
            while let path = enumerator?.nextObject() as? String {
                if path.hasSuffix(".swift") { files.append("Tests/\(target)/\(path)") }
            }
        }
        return files.sorted()
    }
}
