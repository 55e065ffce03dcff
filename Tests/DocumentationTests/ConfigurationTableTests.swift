import Foundation
import Testing
import LarderTestSupport

/// docs/configuration.md's table and `larder serve --help` list the same
/// options, each with the same environment variable and default, so the
/// docs cannot drift from the flags. The help is read from the built binary
/// and parsed loosely (option names, `[env: …]`, `(default: …)`), so it may
/// be reworded or rewrapped freely.
@Suite(.blockingLane) struct ConfigurationTableTests {
    static let page = "docs/configuration.md"

    /// One option as `--help` or the table gives it.
    struct Option: Equatable, CustomStringConvertible {
        var name: String
        /// The environment variable's name, without `=1`.
        var environment: String?
        /// The default, as written (nil when none is given).
        var defaultValue: String?
        var description: String { "\(name) [env: \(environment ?? "-")] (default: \(defaultValue ?? "-"))" }
    }

    @Test func theTableListsEveryOptionOfServeHelpWithItsVariableAndDefault() throws {
        let (status, output, _) = try StoreTestSupport.run(ChildServer.binaryPath, ["serve", "--help"])
        #expect(status == 0)
        let help = Self.helpOptions(String(decoding: output, as: UTF8.self))
        let table = Self.tableOptions(try String(contentsOfFile: Repository.path(Self.page), encoding: .utf8))
        try #require(help.count > 10, "could not read the options of --help: \(help)")
        let helpNames = Set(help.map(\.name)), tableNames = Set(table.map(\.name))
        #expect(helpNames.subtracting(tableNames).isEmpty, "in --help, not in \(Self.page): \(helpNames.subtracting(tableNames).sorted())")
        #expect(tableNames.subtracting(helpNames).isEmpty, "in \(Self.page), not in --help: \(tableNames.subtracting(helpNames).sorted())")
        for option in help {
            guard let row = table.first(where: { $0.name == option.name }) else { continue }
            #expect(row.environment == option.environment, "\(option.name): the table says \(row), --help \(option)")
            if let value = option.defaultValue {
                // The table may say more ("none: CORS off"), never something else.
                #expect(row.defaultValue.map { Self.names(Self.plain($0), value) } == true,
                        "\(option.name): the table's default is \(row.defaultValue ?? "empty"), --help says \(value)")
            }
        }
    }

    /// The parsers on text shaped like ArgumentParser's help and the table,
    /// including a help entry wrapped across lines.
    @Test func theParsersReadOptionsEnvironmentAndDefaults() {
        let help = """
            OPTIONS:
              --host <host>           Address to bind. [env: LARDER_HOST] (default:
                                      127.0.0.1)
              --data-dir <data-dir>   Data directory. [env: LARDER_DATA_DIR] (default: ./larder-data)
              --no-fsync              Skip fsync. [env: LARDER_NO_FSYNC=1]
              --cors-origin <cors-origin>
                                      Origin, or *. [env: LARDER_CORS_ORIGIN,
                                      comma-separated] (default: CORS off)
              -h, --help              Show help information.
            """
        #expect(Self.helpOptions(help) == [
            Option(name: "--host", environment: "LARDER_HOST", defaultValue: "127.0.0.1"),
            Option(name: "--data-dir", environment: "LARDER_DATA_DIR", defaultValue: "./larder-data"),
            Option(name: "--no-fsync", environment: "LARDER_NO_FSYNC", defaultValue: nil),
            Option(name: "--cors-origin", environment: "LARDER_CORS_ORIGIN", defaultValue: "CORS off"),
        ])
        let table = """
            | flag | env | default | meaning |
            | --- | --- | --- | --- |
            | `--host` | `LARDER_HOST` | `127.0.0.1` | address to bind |
            | `--no-fsync` | `LARDER_NO_FSYNC=1` | off | no fsync |
            | `--cors-origin` | `LARDER_CORS_ORIGIN` (comma-separated) | none: CORS off | origins |

            ## `larder healthcheck`

            | flag | env | default | meaning |
            | --- | --- | --- | --- |
            | `--url` | | `http://127.0.0.1:8080/healthz` | not serve's |
            """
        #expect(Self.names("none: CORS off", "CORS off") && Self.names("32", "32") && !Self.names("320", "32") && !Self.names("1.5", "1"))
        #expect(Self.tableOptions(table) == [
            Option(name: "--host", environment: "LARDER_HOST", defaultValue: "`127.0.0.1`"),
            Option(name: "--no-fsync", environment: "LARDER_NO_FSYNC", defaultValue: "off"),
            Option(name: "--cors-origin", environment: "LARDER_CORS_ORIGIN", defaultValue: "none: CORS off"),
        ])
    }

    /// The options of `--help` output: an entry starts with `-x, --name` or
    /// `--name` at the option column and runs until the next; its text is
    /// joined across wrapped lines. `--help` and `--version` are not options
    /// of the server.
    static func helpOptions(_ help: String) -> [Option] {
        var entries: [(name: String, text: String)] = []
        for line in help.split(separator: "\n") {
            if let start = line.firstMatch(of: /^\s{1,6}(?:-\w, )?(--[a-z0-9-]+)(.*)$/) {
                entries.append((String(start.output.1), String(start.output.2)))
            } else if !entries.isEmpty, line.first == " " {
                entries[entries.count - 1].text += " " + line.trimmingCharacters(in: .whitespaces)
            } else if !entries.isEmpty {
                entries.append(("", ""))  // a section heading ends the entry
            }
        }
        return entries.filter { !$0.name.isEmpty && $0.name != "--help" && $0.name != "--version" }.map { entry in
            let text = entry.text.replacing(/\s+/, with: " ")
            let environment = text.firstMatch(of: /\[env: ([A-Z0-9_]+)/).map { String($0.output.1) }
            let value = text.firstMatch(of: /\(default: ([^)]*)\)/).map { String($0.output.1).trimmingCharacters(in: .whitespaces) }
            return Option(name: entry.name, environment: environment, defaultValue: value)
        }
    }

    /// The rows of the page's first table whose first cell is a `--flag`
    /// (the server's; later tables are other commands').
    static func tableOptions(_ page: String) -> [Option] {
        var options: [Option] = []
        var inFirstTable = false
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            guard line.hasPrefix("|") else {
                if inFirstTable { break }
                continue
            }
            inFirstTable = true
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count >= 3, let name = cells[0].firstMatch(of: /^`(--[a-z0-9-]+)`$/) else { continue }
            let environment = cells[1].firstMatch(of: /`([A-Z0-9_]+)(?:=1)?`/).map { String($0.output.1) }
            options.append(Option(name: String(name.output.1), environment: environment,
                                  defaultValue: cells[2].isEmpty ? nil : cells[2]))
        }
        return options
    }

    /// A default as compared: without backticks.
    static func plain(_ text: String) -> String { text.replacingOccurrences(of: "`", with: "") }

    /// Whether `cell` holds `value` as a whole (`32` is in `32` and in
    /// `none: 32`, not in `320`).
    static func names(_ cell: String, _ value: String) -> Bool {
        var searchFrom = cell.startIndex
        while let found = cell.range(of: value, range: searchFrom..<cell.endIndex) {
            let before = found.lowerBound == cell.startIndex ? nil : cell[cell.index(before: found.lowerBound)]
            let after = found.upperBound == cell.endIndex ? nil : cell[found.upperBound]
            let joins = { (c: Character?) in c.map { $0.isLetter || $0.isNumber || $0 == "." } ?? false }
            if !joins(before) && !joins(after) { return true }
            searchFrom = found.upperBound
        }
        return false
    }
}
