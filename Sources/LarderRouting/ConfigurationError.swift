/// A configuration the server cannot run with; the message says which setting and why.
package struct ConfigurationError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
