import LarderHTTP
import LarderRouting

extension RequestJournal {
    /// Records an answered S3 request: as a plain API request is recorded
    /// (status, times, bytes, ETag, fault), with its operation's name and
    /// its target in path style (`/bucket/key?query`), whose path is the
    /// whole of it (the S3 listener has no `/ns/<name>` prefix). Never a
    /// reset of the journal: S3 has no request that empties a namespace.
    package func recordS3(_ request: borrowing HTTPAnsweredRequest, _ response: borrowing HTTPResponse, op: String, target: String) {
        var record = JournalRecord(request, response, pathOffset: 0, nowNanos: clock.nowNanos())
        if target != request.target {
            record.sentTarget = record.target
            record.target = target.utf8.count <= JournalRecord.maxTarget
                ? target : String(decoding: target.utf8.prefix(JournalRecord.maxTarget), as: UTF8.self)
        }
        record.op = op
        self.record(&record)
    }
}
