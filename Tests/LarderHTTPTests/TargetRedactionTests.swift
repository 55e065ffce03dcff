import LarderHTTP
import LarderTestSupport
import Testing

/// The access log's view of a target: `access_token` values never show.
@Suite(.blockingLane) struct TargetRedactionTests {
    @Test(arguments: [
        ("/events?access_token=s3cret", "/events?access_token=REDACTED"),
        ("/events?prefix=a/&access_token=s3cret&x=1", "/events?prefix=a/&access_token=REDACTED&x=1"),
        ("/events?access%5Ftoken=s3cret", "/events?access%5Ftoken=REDACTED"),
        ("/events?%61ccess_token=s3cret&access_token=again", "/events?%61ccess_token=REDACTED&access_token=REDACTED"),
        ("/store/k?access_token=", "/store/k?access_token=REDACTED"),
        ("/store/k?ttl=5", "/store/k?ttl=5"),
        ("/store/access_token=s3cret", "/store/access_token=s3cret"),
        ("/store/k?access_tokens=keep&xaccess_token=keep", "/store/k?access_tokens=keep&xaccess_token=keep"),
        ("/store/k?access_token", "/store/k?access_token"),
        ("/store/k?a=1&&b=2&", "/store/k?a=1&&b=2&"),
        ("/store/k?", "/store/k?"),
        ("/x?%zzaccess_token=1", "/x?%zzaccess_token=1"),
    ])
    func redacts(_ target: String, _ logged: String) {
        #expect(TargetRedaction.redact(target) == logged)
    }
}
