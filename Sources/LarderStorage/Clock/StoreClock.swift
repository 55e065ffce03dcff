import LarderSupport
import Synchronization

/// A namespace's clock (API.md "Time under the test's control"): the
/// system's wall clock until a test moves it, then that clock plus an
/// offset, or a time it stands still at. Everything time-based in the
/// namespace's store reads it: expiry, modification times; versions and
/// real waits do not (they keep the system clock, so versions still rise).
///
/// Costs one load and a branch per read while it has never moved: the
/// state behind the mutex is read only once `moved` is set. `moved` is set
/// after the state it guards is written (release) and read with acquire,
/// so a reader that sees it sees the state too; `reset` clears it after
/// zeroing the state, and a reader racing with that reads either time.
public final class StoreClock: Sendable {
    /// What it reads now, apart from the system clock.
    public struct State: Sendable, Equatable {
        /// Added to the system clock while not frozen.
        public var offsetNanos: Int64 = 0
        /// The time it stands at while frozen.
        public var frozenAtNanos: Int64?

        public init(offsetNanos: Int64 = 0, frozenAtNanos: Int64? = nil) {
            self.offsetNanos = offsetNanos
            self.frozenAtNanos = frozenAtNanos
        }

        public func now(system: Int64) -> Int64 { frozenAtNanos ?? system &+ offsetNanos }

        /// The state after `move`, the system clock reading `system`.
        public func applying(_ move: Move, system: Int64) throws(Backwards) -> State {
            var s = self
            let now = s.now(system: system)
            switch move {
            case .advance(let nanos):
                if s.frozenAtNanos != nil { s.frozenAtNanos = now &+ max(0, nanos) } else { s.offsetNanos &+= max(0, nanos) }
            case .set(let target):
                guard target >= now else { throw Backwards(nowNanos: now, askedNanos: target) }
                if s.frozenAtNanos != nil { s.frozenAtNanos = target } else { s.offsetNanos = target &- system }
            case .freeze:
                s.frozenAtNanos = now
            case .unfreeze:
                if let frozen = s.frozenAtNanos { s.offsetNanos = frozen &- system }
                s.frozenAtNanos = nil
            case .reset:
                s = State()
            }
            return s
        }
    }

    /// How a test moves it.
    public enum Move: Sendable, Equatable {
        /// Forward by this many nanoseconds (never back).
        case advance(Int64)
        /// To this time, nanoseconds since 1970; refused when it is before now.
        case set(Int64)
        case freeze
        /// Runs again from where it stands.
        case unfreeze
        /// Back on the system clock: no offset, not frozen.
        case reset
    }

    /// The state after a move, and the time the clock read then.
    public struct Reading: Sendable, Equatable {
        public let state: State
        public let nowNanos: Int64
        /// How far ahead of the system clock it is (the system clock read with it).
        public let offsetNanos: Int64

        public var frozen: Bool { state.frozenAtNanos != nil }

        /// `state` read with the system clock at `system`.
        init(_ state: State, system: Int64) {
            self.state = state
            nowNanos = state.now(system: system)
            offsetNanos = nowNanos &- system
        }
    }

    public struct Backwards: Error, Sendable, CustomStringConvertible {
        public let nowNanos: Int64
        public let askedNanos: Int64
        public var description: String { "the clock cannot move backwards" }
    }

    @usableFromInline let moved = Atomic<Bool>(false)
    private let state = Mutex(State())

    public init() {}

    /// Nanoseconds since 1970 by this clock. Inlined into the stores and
    /// routes that read it, so an unmoved clock costs them a load and a
    /// branch beside the system clock's read.
    @inlinable
    public func nowNanos() -> Int64 {
        guard moved.load(ordering: .acquiring) else { return Clock.nowNanos() }
        return movedNowNanos()
    }

    @usableFromInline
    func movedNowNanos() -> Int64 {
        state.withLock { $0.now(system: Clock.nowNanos()) }
    }

    /// Whether a test has moved it since it was made or last reset.
    public var isMoved: Bool { moved.load(ordering: .acquiring) }

    /// What it reads now.
    public var reading: Reading {
        state.withLock { Reading($0, system: Clock.nowNanos()) }
    }

    /// Applies `move`; answers the state after it and the time it reads then.
    @discardableResult
    public func apply(_ move: Move) throws(Backwards) -> Reading {
        let result: Result<Reading, Backwards> = state.withLock { s in
            let system = Clock.nowNanos()
            do throws(Backwards) {
                s = try s.applying(move, system: system)
            } catch {
                return .failure(error)
            }
            moved.store(s != State(), ordering: .releasing)
            return .success(Reading(s, system: system))
        }
        return try result.get()
    }

    /// Takes `state` as it is (another server moved the namespace's clock:
    /// the PostgreSQL store's copy follows the database's).
    public func adopt(_ new: State) {
        state.withLock { s in
            s = new
            moved.store(s != State(), ordering: .releasing)
        }
    }
}
