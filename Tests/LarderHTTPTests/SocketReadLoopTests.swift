import Dispatch
@testable import LarderHTTP
import LarderSupport
import LarderTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// One readable event reads on while the input buffer keeps filling to
/// the brim (`SocketChannel.onReadable`): a body that is already waiting
/// in the kernel, several buffers' worth, is handed to the session buffer
/// after buffer in that one event, instead of one buffer per event (each
/// costing Dispatch an epoll round and a thread wake-up).
@Suite(.blockingLane) struct SocketReadLoopTests {
    /// Consumes everything it is given and counts it.
    final class Consumer: SocketChannelDelegate {
        unowned(unsafe) var channel: SocketChannel!
        var received = 0
        var deliveries = 0
        var eofSeen = false
        let done: DispatchSemaphore
        let expected: Int

        init(expected: Int, done: DispatchSemaphore) {
            self.expected = expected
            self.done = done
        }

        func channelReceived(eof: Bool) {
            deliveries += 1
            received += channel.unread.count
            channel.consume(channel.unread.count)
            if received >= expected || eof {
                eofSeen = eof
                done.signal()
            }
        }
        func channelWritable() {}
        func channelTimerFired() {}
        func channelClosed() {}
    }

    /// Fills the socket pair's kernel buffers from `writer` until they take
    /// no more or `limit` bytes are in; returns how many bytes went in.
    static func fill(_ writer: Int32, limit: Int) -> Int {
        var piece = [UInt8](repeating: 0x61, count: 1 << 16)
        var total = 0
        while total < limit {
            let n = piece.withUnsafeMutableBytes { send(writer, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            if n <= 0 { return total }
            total += n
        }
        return total
    }

    @Test func bytesAlreadyWaitingAreReadInOneEventBufferAfterBuffer() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let (reader, writer) = (fds[0], fds[1])
        defer { Glibc.close(writer) }
        // Room for several input buffers in the kernel (asked for; it may
        // give less, and the test only needs more than two buffers' worth).
        var size: Int32 = 4 << 20
        setsockopt(writer, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(reader, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) | O_NONBLOCK)
        // Less than one event's budget: all of it is one event's to read.
        let waiting = Self.fill(writer, limit: SocketChannel.readBudgetPerEvent / 2)

        let channel = SocketChannel(fd: reader, inputCapacity: 0, logger: .silent(), meter: HTTPServerMetrics.Shard())
        let buffer = channel.inputCapacity
        try #require(waiting > 2 * buffer, "the kernel took only \(waiting) bytes; the test needs more than two buffers of \(buffer)")
        let done = DispatchSemaphore(value: 0)
        let consumer = Consumer(expected: waiting, done: done)
        consumer.channel = channel
        channel.delegate = consumer
        channel.loop.execute { channel.start(deadline: .max) }
        #expect(done.wait(timeout: .now() + 60) == .success, "the waiting bytes were all delivered")

        let (events, received, deliveries) = channel.loop.runAndWait { (channel.readableEvents, consumer.received, consumer.deliveries) }
        #expect(received == waiting)
        // One event took them all, handing them over one buffer at a time.
        #expect(events == 1, "\(waiting) waiting bytes took \(events) readable events, \(deliveries) deliveries")
        #expect(deliveries >= (waiting + buffer - 1) / buffer)
        channel.loop.runAndWait { channel.close() }
        withExtendedLifetime(consumer) {}
    }
}
