import Foundation
import LarderClient

// One of several processes that increment one counter at once through the
// HTTP API, so a test can show that `update` (compare-and-swap with retries)
// loses no increment across processes, not only across tasks.
//
//   LarderCounterWorker <base-url> <key> <tasks> <increments-per-task>
//
// Exits 0 when every increment was saved, 1 on a failure, 2 on bad arguments.

/// The counter's stored shape: `{"value": N}`.
struct Counter: Codable, Sendable {
    var value: Int
}

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 4, let baseURL = URL(string: arguments[1]),
      let tasks = Int(arguments[3]), let increments = Int(arguments[4]), tasks > 0, increments >= 0 else {
    FileHandle.standardError.write(Data("usage: LarderCounterWorker <base-url> <key> <tasks> <increments-per-task>\n".utf8))
    exit(2)
}
let key = arguments[2]
let larder = LarderClient(baseURL: baseURL)

do {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<tasks {
            group.addTask {
                for _ in 0..<increments {
                    // `initial` makes the first save create-only, so two
                    // processes starting on an absent key cannot both create it.
                    try await larder.update(Counter.self, at: key, initial: Counter(value: 0)) { $0.value += 1 }
                }
            }
        }
        try await group.waitForAll()
    }
} catch {
    FileHandle.standardError.write(Data("LarderCounterWorker: \(error)\n".utf8))
    exit(1)
}
exit(0)
