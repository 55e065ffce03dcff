/// Larder's version: `larder --version`, and the version the wheel
/// (packaging/python) and the npm package (clients/node/package.json) carry,
/// and openapi.yaml's `info.version`, which `PackagingTests` holds to this one.
public enum LarderVersion {
    public static let current = "0.1.0"
}
