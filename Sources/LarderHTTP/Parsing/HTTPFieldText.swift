extension StringProtocol {
    /// The text without the spaces and tabs around it: a field value or a
    /// list element as RFC 9110 trims it (OWS), for both faces.
    public var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
