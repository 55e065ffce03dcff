/// What a channel tells the protocol session above it. Called on the channel's queue.
protocol SocketChannelDelegate: AnyObject {
    /// New input is buffered, or (`eof`) the peer closed its side.
    func channelReceived(eof: Bool)
    /// The socket took what was waiting; more output may be queued.
    func channelWritable()
    /// The timer reached the deadline the session set.
    func channelTimerFired()
    /// The channel closed; it will call nothing more.
    func channelClosed()
}
