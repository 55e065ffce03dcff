import Dispatch
import Foundation
import LarderWire
#if canImport(Glibc)
import Glibc
#endif

/// Runs `python3` (the first on PATH, as `bash Tests/provision.sh` installs it) with a
/// script file or code on stdin, and collects stdout and stderr. For the
/// checks that Python's tooling does best: JSON Schema (Compose), OpenAPI
/// validation, schemathesis.
package enum PythonRunner {
    package struct Result {
        package let status: Int32
        package let stdout: String
        package let stderr: String
        /// Killed at the deadline.
        package let timedOut: Bool
    }

    /// `python3 arguments...` with `stdin`, in `directory`, with `environment`
    /// added to this process's. Killed (SIGKILL) after `timeout` seconds.
    package static func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:],
                    directory: String? = nil, timeout: Double = 120) throws -> Result {
        let result = try ProcessRunner.run("/usr/bin/env", ["python3"] + arguments, stdin: stdin.map { Array($0.utf8) },
                                           environment: environment, directory: directory, timeout: timeout)
        return Result(status: result.status, stdout: result.stdoutText, stderr: result.stderr, timedOut: result.timedOut)
    }

    /// The same, off the cooperative pool (`ProcessRunner`'s async form).
    package static func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:],
                    directory: String? = nil, timeout: Double = 120) async throws -> Result {
        let result = try await ProcessRunner.run("/usr/bin/env", ["python3"] + arguments, stdin: stdin.map { Array($0.utf8) },
                                                 environment: environment, directory: directory, timeout: timeout)
        return Result(status: result.status, stdout: result.stdoutText, stderr: result.stderr, timedOut: result.timedOut)
    }

    /// Runs `code` (given on stdin) with `arguments` as `sys.argv[1:]`.
    package static func run(code: String, arguments: [String] = [], environment: [String: String] = [:],
                    directory: String? = nil, timeout: Double = 120) throws -> Result {
        try run(["-"] + arguments, stdin: code, environment: environment, directory: directory, timeout: timeout)
    }

    /// Throws a clear error naming what to install when python3 or one of
    /// `modules` (import name → pip package) is missing.
    package static func require(_ modules: [(module: String, package: String)]) throws {
        let names = modules.map(\.module)
        let code = """
        import importlib.util, sys
        print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))
        """
        // Once more when the first run fails without a word: on a loaded
        // CI machine a run was once killed at its deadline (status, no stderr).
        var result: Result
        var attempt = 0
        repeat {
            attempt += 1
            do {
                result = try run(code: code, arguments: names, timeout: 180)
            } catch {
                throw ClientError("python3 could not be started (\(error)); `bash Tests/provision.sh` installs it")
            }
        } while result.status != 0 && result.stderr.isEmpty && attempt < 2
        guard result.status == 0 else {
            throw ClientError("python3 did not run (\(result.timedOut ? "killed after 180 s" : "exit \(result.status)")): \(result.stderr)")
        }
        let missing = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ").map { name in
            modules.first { $0.module == name }?.package ?? String(name)
        }
        guard missing.isEmpty else {
            throw ClientError("python3 lacks \(missing.joined(separator: ", ")): `python3 -m pip install \(missing.joined(separator: " "))` (`bash Tests/provision.sh` installs them)")
        }
    }
}
