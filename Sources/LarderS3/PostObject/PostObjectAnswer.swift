import LarderHTTP

/// What a browser upload is answered with once its object is stored, as
/// its form asks: a `303 See Other` to `success_action_redirect` (its
/// query naming the bucket, key and ETag), else `success_action_status`
/// 200 (empty), 201 (a `PostResponse` document) or, for any other value or
/// none, 204. Every answer names the object's ETag and where it lies.
struct PostObjectAnswer: Sendable {
    let bucket: String
    let key: String
    /// The request's `Host`: the object's URL is absolute, as S3's are.
    let host: String
    let redirect: String?
    let status: String?

    init(bucket: String, key: String, host: String, fields: [String: String]) {
        self.bucket = bucket
        self.key = key
        self.host = host
        // `redirect`: the field's older name.
        redirect = (fields["success_action_redirect"] ?? fields["redirect"]).flatMap { $0.isEmpty ? nil : $0 }
        status = fields["success_action_status"]
    }

    func response(_ attributes: ObjectAttributes) -> HTTPResponse {
        let location = "http://" + host + "/" + bucket + "/" + AWSURIEncoding.encode(key.utf8, keepSlash: true)
        var headers: [(String, String)] = [("ETag", attributes.etag), ("Location", location)]
        headers += ServerSideEncryption.echoed(attributes.headers)
        if let redirect {
            let query = "bucket=" + AWSURIEncoding.encode(bucket.utf8, keepSlash: false)
                + "&key=" + AWSURIEncoding.encode(key.utf8, keepSlash: false)
                + "&etag=" + AWSURIEncoding.encode(attributes.etag.utf8, keepSlash: false)
            headers.append(("Location", redirect + (redirect.contains("?") ? "&" : "?") + query))
            headers.removeAll { $0.0 == "Location" && $0.1 == location }
            return HTTPResponse(status: HTTPStatus(303, "See Other"), headers: headers)
        }
        switch status {
        case "200":
            return HTTPResponse(status: .ok, headers: headers)
        case "201":
            var xml = S3XML()
            xml.open("PostResponse")
            xml.element("Location", location)
            xml.element("Bucket", bucket)
            xml.element("Key", key)
            xml.element("ETag", attributes.etag)
            xml.close("PostResponse")
            var response = xml.response()
            response.status = .created
            response.headers += headers
            return response
        default:
            return HTTPResponse(status: .noContent, headers: headers)
        }
    }
}
