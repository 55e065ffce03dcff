import LarderHTTP
import LarderSupport

/// Counts the bytes of a chunked request body (whose length no header
/// gives) for its journal entry, by standing between the connection and
/// the route's sink. Made only for chunked requests.
final class BodyByteCounter: Sendable {
    private let total = Locked<Int64>(0)

    var count: Int64 { total.withLock { $0 } }

    func add(_ n: Int) { total.withLock { $0 += Int64(n) } }

    /// `sink`, counted; a sink that gates `100 Continue` stays one.
    func counting(_ sink: HTTPRequestBodySink) -> HTTPRequestBodySink {
        if let gate = sink as? HTTPContinueGate { return CountingGate(gate, counter: self) }
        return CountingSink(sink, counter: self)
    }
}

/// Passes every call on to the route's sink, counting what it writes.
/// Used on the connection's queue only, as the sink it wraps.
private class CountingSink: HTTPRequestBodySink {
    let inner: HTTPRequestBodySink
    let counter: BodyByteCounter

    init(_ inner: HTTPRequestBodySink, counter: BodyByteCounter) {
        self.inner = inner
        self.counter = counter
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        counter.add(chunk.count)
        try inner.write(chunk)
    }

    func finish() { inner.finish() }
    func abort() { inner.abort() }
}

private final class CountingGate: CountingSink, HTTPContinueGate {
    private let gate: HTTPContinueGate

    init(_ gate: HTTPContinueGate, counter: BodyByteCounter) {
        self.gate = gate
        super.init(gate, counter: counter)
    }

    func whenBodyWanted(_ proceed: @escaping @Sendable () -> Void) { gate.whenBodyWanted(proceed) }
}
