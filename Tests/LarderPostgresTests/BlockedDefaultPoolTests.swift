import Dispatch
import Foundation
import LarderPostgres
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderTestSupport
import Testing
import LarderStoreVocabulary

/// Synchronous callers (the embedded API, opening a store or a namespace)
/// block a thread in `StoreReply.get()` until the PostgreSQL store answers.
/// When they block every thread of Dispatch's default pool, the answers must
/// still come: the store hands them over on threads of its own. Handed over
/// on `.global()`, they queued behind the blocked callers until libdispatch
/// added threads, a few a second, and a loaded test process stalled for a
/// minute (clients' 0.5 s timeouts firing after 33 s).
@Suite(.blockingLane, .enabled(if: TestPostgres.isAvailable, "PostgreSQL is not installed (bash Tests/provision.sh installs it)"))
struct BlockedDefaultPoolTests {
    final class NoObserver: StoreChangeObserver {
        func storeDidChange(_ change: StoreChange) {}
    }

    @Test func callersBlockingTheDefaultPoolGetTheirAnswers() throws {
        let options = try PostgresStoreOptions(url: TestPostgres.shared().url(schema: TestPostgres.makeSchemaName()))
        let store = try PostgresStore.factory(options: options)(NoObserver(), Logger(label: "test"))
        defer { store.close() }
        let key = try StoreKey("absent/key")
        let callers = 128
        let done = DispatchGroup()
        let answered = Locked(0)
        for _ in 0..<callers {
            DispatchQueue.global().async(group: done) {
                do {
                    let metadata = try store.currentMetadata(of: key).get()
                    if metadata == nil { answered.withLock { $0 += 1 } }
                } catch {}
            }
        }
        // Answered in well under a second when the store needs no thread of
        // the pool; the bound only tells a stall from a slow machine.
        #expect(done.wait(timeout: .now() + 20) == .success, "the blocked callers still wait for their answers")
        #expect(answered.withLock { $0 } == callers)
    }
}
