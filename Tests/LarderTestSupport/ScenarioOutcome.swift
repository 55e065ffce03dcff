import Foundation
import Testing

/// One line of what a scenario script prints (Tests/browser/viewer_scenarios.py,
/// Tests/s3/boto3_face.py): `{"scenario", "ok", "error"}` for each scenario
/// it ran, so that one process runs many and a failure is still named.
package struct ScenarioOutcome: Decodable, Sendable {
    package let scenario: String
    package let ok: Bool
    package let error: String?

    /// The outcome lines among `output`'s lines; other lines are skipped.
    package static func parse(_ output: String) -> [ScenarioOutcome] {
        output.split(separator: "\n").compactMap { try? JSONDecoder().decode(ScenarioOutcome.self, from: Data($0.utf8)) }
    }

    /// Records one issue per failed scenario, named `group/scenario` when a
    /// group is given. An error, not a comment: the scenario and its reason
    /// are then on the ✘ line itself, which a CI log excerpt keeps.
    package static func recordFailures(_ outcomes: [ScenarioOutcome], group: String? = nil,
                                       sourceLocation: SourceLocation = #_sourceLocation) {
        for outcome in outcomes where !outcome.ok {
            Issue.record(Failed(name: group.map { "\($0)/\(outcome.scenario)" } ?? outcome.scenario,
                                reason: outcome.error ?? "failed"),
                         sourceLocation: sourceLocation)
        }
    }

    /// A scenario the script reported as failed.
    struct Failed: Error, CustomStringConvertible {
        let name: String
        let reason: String
        var description: String { "\(name) failed: \(reason)" }
    }
}
