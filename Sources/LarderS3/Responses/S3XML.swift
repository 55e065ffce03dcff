import LarderHTTP

/// Builds S3's XML bodies: a declaration, then elements in order. Text is
/// escaped; names are the caller's constants.
struct S3XML {
    var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

    static let namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

    mutating func open(_ name: String, namespaced: Bool = false) {
        text += namespaced ? "<\(name) xmlns=\"\(Self.namespace)\">" : "<\(name)>"
    }

    mutating func close(_ name: String) { text += "</\(name)>" }

    mutating func element(_ name: String, _ value: String) {
        text += "<\(name)>" + Self.escape(value) + "</\(name)>"
    }

    /// The body as an answer with S3's content type.
    func response(_ status: HTTPStatus = .ok, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/xml")] + headers, body: .bytes(Array(text.utf8)))
    }

    static func escape(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for c in value.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default:
                // XML 1.0 cannot carry most control characters, even escaped
                // as text; S3 writes them as character references.
                if c.value < 0x20 && c != "\t" && c != "\n" && c != "\r" { out += "&#\(c.value);" } else { out.unicodeScalars.append(c) }
            }
        }
        return out
    }
}
