extension JSONValue {
    /// Applies `patch` to this value as a JSON Merge Patch (RFC 7396 §2).
    ///
    /// Follows the RFC's pseudocode exactly:
    /// - a patch that is not an object replaces the target entirely;
    /// - otherwise a non-object target is first replaced by `{}`, then for
    ///   each patch member: `null` removes the member, any other value is
    ///   merge-patched into the target's member (recursively, so nested
    ///   objects merge and nested `null`s are dropped).
    ///
    /// Members of the target keep their order; new members are appended in
    /// the patch's order.
    ///
    /// Recursion depth is bounded by the patch's nesting, which the parser
    /// limits.
    public func mergePatched(with patch: JSONValue) -> JSONValue {
        guard case .object(let patchMembers) = patch else {
            return patch
        }
        var result: MemberTable
        if case .object(let targetMembers) = self {
            result = MemberTable(normalizing: targetMembers)
        } else {
            result = MemberTable()
        }
        for (name, value) in MemberTable.normalized(patchMembers) {
            let existing = result.find(name)
            if case .null = value {
                if let existing { result.remove(at: existing) }
            } else if let existing {
                result.replaceValue(at: existing, with: result.value(at: existing).mergePatched(with: value))
            } else {
                // An absent member patches like a non-object target.
                result.append(name, JSONValue.null.mergePatched(with: value))
            }
        }
        return .object(result.finish())
    }
}
