import CEpoll
import Dispatch
import FoundationEssentials
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// Told by the loop when its socket is ready. Called on the loop's thread.
protocol PGSocketHandler: AnyObject {
    func socketReadable()
    func socketWritable()
}

/// One thread that waits on the PostgreSQL sockets of its pools (a
/// server's stores have one pool; a process with more than eight pools
/// shares loops, see `PostgresExecutor.next`) with epoll, reads the
/// answers that come, and runs the pools' task jobs (`PostgresExecutor`)
/// in between: a connection's state and the
/// tasks that use it share the thread, so an answer resumes its task with
/// no thread woken, and a task sends its next statement right there.
///
/// Through Dispatch sources, each answer cost four wake-ups: libdispatch's
/// manager thread out of epoll, a worker for the connection's queue, a
/// task lane for the resumed task, and the manager again to re-arm the
/// one-shot source. That was most of the server's time in a PostgreSQL
/// write. Here an answer to an idle loop is one wake-up, and none to a
/// busy one.
///
/// Invariants: `handlers` and `local` are touched only on the loop's
/// thread; `posted` is guarded by its lock. No job may block (a blocking
/// wait for a reply would wait for this very thread): see
/// `PostgresExecutor.blockingReply`.
final class PGEventLoop: @unchecked Sendable {

    private let epoll: Int32
    /// An eventfd the loop also waits on: written when a job is posted
    /// from another thread while the loop sleeps.
    private let wake: Int32
    /// Jobs posted from other threads, and whether the loop is (about to
    /// be) asleep in `epoll_wait`.
    private let posted = Locked<(jobs: [() -> Void], sleeping: Bool)>(([], false))
    /// Loop thread only: the socket of each registered connection.
    private var handlers: [Int32: any PGSocketHandler] = [:]
    /// Loop thread only: jobs the loop posted to itself.
    private var local: [() -> Void] = []
    /// Set on the loop's thread (a pthread key).
    private let onLoop = ThreadMark()
    /// Set on the thread of every loop of the process.
    private static let onAnyLoop = ThreadMark()

    /// A loop and its thread, which runs for the rest of the process.
    init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wake = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        precondition(epoll >= 0 && wake >= 0, "epoll_create1 or eventfd failed: errno \(errno)")
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wake
        precondition(epoll_ctl(epoll, EPOLL_CTL_ADD, wake, &event) == 0, "epoll_ctl failed: errno \(errno)")
        // Swift's default stack: JSON nested hundreds deep is parsed in tasks here.
        DetachedThread.start(name: "larder.postgres", stackSize: 8 << 20) { [self] in run() }
    }

    /// Whether the caller runs on the loop's thread.
    var isCurrent: Bool { onLoop.isSet }

    /// Whether the caller runs on any loop's thread: where no one may
    /// block, since another loop may be waiting for this one.
    static var isOnAnyLoop: Bool { onAnyLoop.isSet }

    /// Runs `job` on the loop: after the current job or event when called
    /// there, else as soon as the loop gets to it.
    func execute(_ job: @escaping () -> Void) {
        if isCurrent {
            local.append(job)
            return
        }
        let wakeUp = posted.withLock { p -> Bool in
            p.jobs.append(job)
            defer { p.sleeping = false }
            return p.sleeping
        }
        if wakeUp { eventfd_write(wake, 1) }
    }

    /// Runs `body` on the loop and returns its result: at once when called
    /// there, else waiting for the loop. Never from another loop: two loops
    /// waiting on each other would both stop.
    func sync<T>(_ body: @escaping () -> T) -> T {
        if isCurrent { return body() }
        precondition(!Self.isOnAnyLoop, "a PostgreSQL event loop waiting for another")
        let done = DispatchSemaphore(value: 0)
        var result: T?
        execute {
            result = body()
            done.signal()
        }
        done.wait()
        return result!
    }

    /// On the loop: tells `handler` when `fd` is readable (and writable,
    /// while `setWriteInterest` says so) until `unregister`. False if epoll
    /// refused the socket.
    func register(_ fd: Int32, _ handler: any PGSocketHandler) -> Bool {
        precondition(isCurrent, "registering off the loop")
        handlers[fd] = handler
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = fd
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0 else {
            handlers[fd] = nil
            return false
        }
        return true
    }

    /// On the loop: whether `fd`'s handler also hears when it is writable.
    func setWriteInterest(_ fd: Int32, _ on: Bool) {
        precondition(isCurrent, "changing interest off the loop")
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | (on ? EPOLLOUT.rawValue : 0)
        event.data.fd = fd
        _ = epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event)
    }

    /// On the loop, before the socket closes: no more events for `fd`.
    func unregister(_ fd: Int32) {
        precondition(isCurrent, "unregistering off the loop")
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
        handlers[fd] = nil
    }

    private func run() {
        onLoop.set()
        Self.onAnyLoop.set()
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            runJobs()
            // Asleep only if nothing was posted since: a post from now on writes `wake`.
            let mayWait = local.isEmpty && posted.withLock { p -> Bool in
                guard p.jobs.isEmpty else { return false }
                p.sleeping = true
                return true
            }
            let n = events.withUnsafeMutableBufferPointer {
                epoll_wait(epoll, $0.baseAddress, Int32($0.count), mayWait ? -1 : 0)
            }
            if mayWait { posted.withLock { $0.sleeping = false } }
            guard n > 0 else { continue }  // EINTR, or nothing ready
            for i in 0..<Int(n) {
                let fd = events[i].data.fd
                let flags = events[i].events
                if fd == wake {
                    var count: eventfd_t = 0
                    _ = eventfd_read(wake, &count)
                    continue
                }
                // A handler earlier in this batch may have unregistered (closed) its socket.
                guard let handler = handlers[fd] else { continue }
                if flags & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { handler.socketReadable() }
                if flags & EPOLLOUT.rawValue != 0, let still = handlers[fd], still === handler { handler.socketWritable() }
            }
        }
    }

    /// Runs the jobs waiting now: the loop's own, then those posted. Jobs
    /// they post wait for the next turn, after a look at the sockets
    /// (`epoll_wait` without sleeping when jobs wait), so that a stream of
    /// new requests never keeps the answers from being read.
    private func runJobs() {
        let batch = local + posted.withLock { p in
            defer { p.jobs = [] }
            return p.jobs
        }
        local = []
        for job in batch { job() }
    }
}
