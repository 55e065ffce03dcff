import LarderStorage

extension DiskStore {
    /// Opens the disk store in `options.dataDirectory` when the server starts.
    public static func factory(options: DiskStoreOptions) -> ValueStoreFactory {
        { changes, logger in try DiskStore(options: options, logger: logger, changes: changes) }
    }
}
