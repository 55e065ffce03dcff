/// Counters of another face of the same server (the S3 listener's),
/// written into the Larder API's `/metrics` after its own families: the
/// face that counts them says how, this one knows nothing of it.
package protocol MetricsFamilies: Sendable {
    /// Appends its families, in Prometheus text format 0.0.4.
    func render(into text: inout String)
}
