import LarderApp
import LarderS3

/// The S3 listener's answers in the Larder API's `/metrics`:
/// `larder_s3_requests_total` by operation and status.
struct S3MetricsFamilies: MetricsFamilies {
    let counts: S3RequestCounts

    func render(into text: inout String) {
        text += "# HELP larder_s3_requests_total Answers of the S3 listener by S3 operation (PutObject, ListObjectsV2, ...) "
            + "and status (0: reset, none sent).\n# TYPE larder_s3_requests_total counter\n"
        for c in counts.all {
            text += "larder_s3_requests_total{op=\"\(c.op)\",status=\"\(c.status)\"} \(c.count)\n"
        }
    }
}
