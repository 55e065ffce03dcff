import LarderSupport

/// Where the stores of named namespaces (`/ns/<name>/`) live: the backend's
/// side of them. The server's `Namespaces` registry decides when a
/// namespace is opened or dropped; this only makes, lists and removes the
/// stores. Each namespace's store is a whole `ValueStore` of its own,
/// under the same read-only fixtures as the default one.
public protocol NamespaceStores: Sendable {
    /// The namespaces that hold data from an earlier run (reopened at start).
    func existing() throws -> [String]
    /// Opens (creating if need be) the store of namespace `name`, a name
    /// the server has already checked (`A-Z a-z 0-9 _ . -`, not `.` or `..`).
    func open(_ name: String, changes: StoreChangeObserver, logger: Logger) throws -> any ValueStore
    /// Closes `store` and removes namespace `name`'s data in constant time:
    /// what takes longer (deleting its files) runs in the background.
    func drop(_ name: String, store: any ValueStore, logger: Logger)
    /// Lets go of what the namespaces share (the fixtures); after every
    /// namespace's store is closed.
    func close()
    /// Has `handler` told the name of each namespace that another server
    /// sharing the backend dropped (PostgreSQL: one database, several
    /// servers), so that this server closes its store of it; its data is
    /// gone already. Called once, when the server starts.
    func whenDroppedElsewhere(_ handler: @escaping @Sendable (_ name: String) -> Void)
}

extension NamespaceStores {
    /// A backend no other server shares (a data directory is locked by
    /// one server) has nothing to say.
    public func whenDroppedElsewhere(_ handler: @escaping @Sendable (_ name: String) -> Void) {}
}
