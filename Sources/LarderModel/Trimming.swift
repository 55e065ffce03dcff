/// Trimming as Foundation's `trimmingCharacters(in: .whitespaces)` and
/// `(in: .whitespacesAndNewlines)` do, for the server's targets, which
/// import FoundationEssentials only (it has no `CharacterSet`): the binary
/// then links no ICU, which is most of Foundation's size.
extension StringProtocol {
    /// Without leading and trailing spaces and tabs (Unicode white space that is not a line break).
    package func trimmingWhitespace() -> String {
        trimming { $0.isWhitespace && !$0.isNewline }
    }

    /// Without leading and trailing Unicode white space, line breaks included.
    package func trimmingWhitespaceAndNewlines() -> String {
        trimming(\.isWhitespace)
    }

    private func trimming(_ drop: (Character) -> Bool) -> String {
        guard let first = firstIndex(where: { !drop($0) }), let last = lastIndex(where: { !drop($0) }) else { return "" }
        return String(self[first...last])
    }
}
