#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own for work that runs for the rest of the process (an
/// event loop) or blocks (a handshake polled to its end): pthreads, since
/// the server's targets import FoundationEssentials only, which has no
/// `Thread`.
public enum DetachedThread {
    /// Starts `body` on a new detached thread named `name` (at most 15
    /// bytes show in `top`) with a stack of `stackSize` bytes.
    public static func start(name: String, stackSize: Int, _ body: @escaping @Sendable () -> Void) {
        final class Box {
            let name: String, body: @Sendable () -> Void
            init(_ name: String, _ body: @escaping @Sendable () -> Void) { self.name = name; self.body = body }
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, stackSize)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let context = Unmanaged.passRetained(Box(name, body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, &attributes, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            // The name `top -H` and gdb show (pthread_setname_np is not in the Glibc module).
            let fd = open("/proc/thread-self/comm", O_WRONLY)
            if fd >= 0 {
                let bytes = Array(box.name.utf8.prefix(15))
                _ = write(fd, bytes, bytes.count)
                close(fd)
            }
            box.body()
            return nil
        }, context)
        precondition(status == 0, "pthread_create failed: \(status)")
    }
}
