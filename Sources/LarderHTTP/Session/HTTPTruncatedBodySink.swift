/// A body sink that answers a body the client cut short itself: the client
/// closed its side of the connection (a half-close, still reading) before
/// the body was all in, so the request can never complete. Without this,
/// the connection just closes with no answer; with it the sink says what
/// that means in its protocol's words (S3's `400 IncompleteBody`), and the
/// connection closes after the answer.
public protocol HTTPTruncatedBodySink: HTTPRequestBodySink {
    /// Called on the connection's loop instead of more `write`s or
    /// `finish`; answer through the request's responder, at once.
    func bodyEndedEarly()
}
