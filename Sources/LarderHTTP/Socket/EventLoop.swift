import CEpoll
import Dispatch
import LarderSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Told by its loop what happened to its socket. Called on the loop's thread.
protocol EventLoopSocket: AnyObject {
    /// `events`: the epoll flags that came (`EPOLLIN`, `EPOLLOUT`, `EPOLLRDHUP`,
    /// `EPOLLHUP`, `EPOLLERR`).
    func socketEvent(_ events: UInt32)
}

/// What a connection's answers from other threads are run on: its event
/// loop, or (for the in-process exchange and tests) a serial queue.
public protocol ConnectionExecutor: AnyObject, Sendable {
    /// Runs `job` on the executor, after what it is doing now.
    func execute(_ job: @escaping @Sendable () -> Void)
}

extension DispatchQueue: ConnectionExecutor {
    public func execute(_ job: @escaping @Sendable () -> Void) { async(execute: job) }
}

/// One thread that owns a share of the server's connections: it waits on
/// their sockets with epoll (edge-triggered: a socket is added once and its
/// interest never changes), runs their events, their timers, and the jobs
/// other threads post to it (an answer that came later).
///
/// Through Dispatch, every readable event cost libdispatch's manager thread
/// an `epoll_wait`, two `epoll_ctl` (one-shot re-arm), an `ioctl` and a
/// wake-up of a worker (futex, eventfd): about half a cached GET's CPU
/// (DISPATCH-NOTES). Here a request on a busy loop costs its `recv`, its
/// `send` and a share of one `epoll_wait`.
///
/// Invariants: `sockets`, `local` and the timer heap are touched only on the
/// loop's thread; `posted` is guarded by its lock, `hasPosted` and
/// `sleeping` are atomics (see `sleeping` for their protocol). A job, an event or a
/// timer must not block for long (disk I/O is fine; waiting for another
/// request is not: that one may need this very thread).
final class EventLoop: ConnectionExecutor, @unchecked Sendable {
    /// The loops connections are spread over: one per core, for the life
    /// of the process (every server in it shares them).
    static let shared: [EventLoop] = {
        let cores = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        return (0..<cores).map { EventLoop(name: "larder.loop.\($0)") }
    }()
    private static let nextShared = Atomic<Int>(0)

    /// The next loop of `shared`, in turn.
    static func next() -> EventLoop {
        let loops = shared
        return loops[nextShared.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count]
    }

    private let epoll: Int32
    /// An eventfd the loop also waits on: written when a job is posted from
    /// another thread while the loop sleeps.
    private let wake: Int32
    /// Jobs posted from other threads.
    private let posted = Locked<[() -> Void]>([])
    /// `posted` may hold jobs: set after a post, cleared by the loop before
    /// it takes them. The loop looks at this flag, not the lock, each turn.
    private let hasPosted = Atomic<Bool>(false)
    /// The loop is (about to be) asleep in `epoll_wait`: a post then writes
    /// `wake`. With `hasPosted`, a pair of sequentially consistent flags
    /// (each side writes its own, then reads the other's): either the loop
    /// sees the post and does not sleep, or the poster sees it asleep.
    private let sleeping = Atomic<Bool>(false)
    /// Loop thread only: each registered socket, by its descriptor.
    private var sockets: [EventLoopSocket?] = []
    /// Loop thread only: jobs the loop posted to itself.
    private var local: [() -> Void] = []
    /// Loop thread only: the timers, earliest first.
    private var timers = MinHeap<UInt64, LoopTimer>()
    /// Set on the loop's thread.
    private let onLoop = ThreadMark()

    private init(name: String) {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wake = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        precondition(epoll >= 0 && wake >= 0, "epoll_create1 or eventfd failed: errno \(errno)")
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wake
        precondition(epoll_ctl(epoll, EPOLL_CTL_ADD, wake, &event) == 0, "epoll_ctl failed: errno \(errno)")
        // Swift's default stack: routes parse JSON nested hundreds deep here.
        DetachedThread.start(name: name, stackSize: 8 << 20) { [self] in run() }
    }

    /// Whether the caller runs on the loop's thread.
    var isCurrent: Bool { onLoop.isSet }

    /// Runs `job` on the loop: after the current event or job when called
    /// there, else as soon as the loop gets to it.
    func execute(_ job: @escaping @Sendable () -> Void) { post(job) }

    /// `execute` for a job that is not Sendable: only from code that owns
    /// what the job touches and hands it over to the loop.
    func post(_ job: @escaping () -> Void) {
        if isCurrent {
            local.append(job)
            return
        }
        posted.withLock { $0.append(job) }
        hasPosted.store(true, ordering: .sequentiallyConsistent)
        if sleeping.exchange(false, ordering: .sequentiallyConsistent) { eventfd_write(wake, 1) }
    }

    // MARK: - Sockets

    /// On the loop: `socket` hears of `fd` from now until `unregister`:
    /// input, the peer's end, and room to write, edge-triggered (each
    /// change once). What is already there is reported at once. False if
    /// epoll refused the descriptor.
    func register(_ fd: Int32, _ socket: EventLoopSocket) -> Bool {
        precondition(isCurrent, "registering off the loop")
        let slot = Int(fd)
        if slot >= sockets.count { sockets += repeatElement(nil, count: slot + 1 - sockets.count + 64) }
        sockets[slot] = socket
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
        event.data.fd = fd
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0 else {
            sockets[slot] = nil
            return false
        }
        return true
    }

    /// On the loop, before the descriptor is closed: no more events for it.
    func unregister(_ fd: Int32) {
        precondition(isCurrent, "unregistering off the loop")
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
        if Int(fd) < sockets.count { sockets[Int(fd)] = nil }
    }

    // MARK: - Timers

    /// On the loop: `timer` fires at `deadline` (uptime nanoseconds; a
    /// millisecond or so late), replacing the deadline it had.
    func schedule(_ timer: LoopTimer, at deadline: UInt64) {
        timer.deadline = deadline
        // Only an earlier deadline needs an entry of its own: a later one is
        // found when the entry already queued comes due (`fireTimers`).
        if deadline < timer.queuedAt {
            timer.queuedAt = deadline
            timers.push(deadline, timer)
        }
    }

    /// On the loop: `timer` does not fire again (until scheduled again).
    func cancel(_ timer: LoopTimer) { timer.deadline = .max }

    /// Fires the timers due by now; returns the milliseconds to wait for
    /// the next one (-1: none).
    private func fireTimers() -> Int32 {
        while let (at, timer) = timers.first {
            let now = DispatchTime.now().uptimeNanoseconds
            if at > now { return Int32(min(UInt64(Int32.max), (at - now + 999_999) / 1_000_000)) }
            timers.removeFirst()
            // A stale entry: the timer has a newer one queued.
            guard timer.queuedAt == at else { continue }
            timer.queuedAt = .max
            if timer.deadline <= now {
                timer.deadline = .max
                timer.fire()
            } else if timer.deadline != .max {
                // Moved later since it was queued: queue it for then.
                timer.queuedAt = timer.deadline
                timers.push(timer.deadline, timer)
            }
        }
        return -1
    }

    // MARK: - The loop

    private func run() {
        onLoop.set()
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while true {
            runJobs()
            // After the jobs, which may set timers; timers may post jobs
            // (then the wait below does not sleep).
            let timeout = fireTimers()
            // Asleep only if nothing was posted since: a post from now on writes `wake`.
            var mayWait = local.isEmpty
            if mayWait {
                sleeping.store(true, ordering: .sequentiallyConsistent)
                if hasPosted.load(ordering: .sequentiallyConsistent) {
                    sleeping.store(false, ordering: .sequentiallyConsistent)
                    mayWait = false
                }
            }
            let n = events.withUnsafeMutableBufferPointer {
                epoll_wait(epoll, $0.baseAddress, Int32($0.count), mayWait ? timeout : 0)
            }
            if mayWait { sleeping.store(false, ordering: .sequentiallyConsistent) }
            guard n > 0 else { continue }  // EINTR, a timer, or nothing ready
            for i in 0..<Int(n) {
                let fd = events[i].data.fd
                if fd == wake {
                    var count: eventfd_t = 0
                    _ = eventfd_read(wake, &count)
                    continue
                }
                // A socket earlier in this batch may have closed this one.
                guard Int(fd) < sockets.count, let socket = sockets[Int(fd)] else { continue }
                socket.socketEvent(events[i].events)
            }
        }
    }

    /// Runs the jobs waiting now: the loop's own, then those posted. Jobs
    /// they post wait for the next turn, after a look at the sockets.
    private func runJobs() {
        var batch = local
        local = []
        // The flag first: most turns nothing was posted, and no lock is taken.
        if hasPosted.load(ordering: .relaxed) && hasPosted.exchange(false, ordering: .acquiring) {
            let others = posted.withLock { jobs -> [() -> Void] in
                defer { jobs = [] }
                return jobs
            }
            batch += others
        }
        for job in batch { job() }
    }
}

/// A timer of an `EventLoop`, used on its thread only.
final class LoopTimer {
    /// When it fires next (`.max`: not scheduled).
    fileprivate(set) var deadline: UInt64 = .max
    /// The deadline of its entry in the loop's heap (`.max`: none).
    fileprivate var queuedAt: UInt64 = .max
    let fire: () -> Void

    init(_ fire: @escaping () -> Void) { self.fire = fire }
}
