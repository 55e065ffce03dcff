/// An upload handed from the connection's thread to the continuations that
/// publish it. Unchecked: after `finish` only one continuation at a
/// time touches it (each starts after the previous one handed it on).
package struct HandedUpload: @unchecked Sendable {
    package let value: ValueUpload
    package init(_ value: ValueUpload) { self.value = value }
}
