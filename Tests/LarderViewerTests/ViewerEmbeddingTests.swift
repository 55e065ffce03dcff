import Foundation
import LarderTestSupport
import LarderWire
import LarderViewer
import Testing

/// The viewer is built into the binary (the EmbedViewer plugin): the copy
/// matches `Public/` byte for byte, a binary copied alone elsewhere serves
/// it, and `--public-dir` still overrides it.
@Suite(.blockingLane) struct ViewerEmbeddingTests {
    /// Every file under Public/ (hidden ones aside), relative, sorted.
    static func publicFiles() -> [String] {
        let root = Repository.path("Public")
        let walker = FileManager.default.enumerator(atPath: root)
        var files: [String] = []
        while let path = walker?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue,
                  !path.split(separator: "/").contains(where: { $0.hasPrefix(".") }) else { continue }
            files.append(path)
        }
        return files.sorted()
    }

    /// Fails when the plugin did not run or a build missed an edit.
    @Test func theBuiltInCopyIsPublicAsItIsNow() throws {
        #expect(ViewerFiles.embeddedPaths == Self.publicFiles())
        for path in Self.publicFiles() {
            let onDisk = try #require(FileManager.default.contents(atPath: Repository.path("Public") + "/" + path))
            let built = try #require(ViewerFiles.embedded.file(path))
            #expect(built.bytes == Array(onDisk), "Public/\(path) differs from the copy in the binary: rebuild")
            #expect(built.entityTag == ViewerFiles.directory(Repository.path("Public")).file(path)?.entityTag)
        }
    }

    /// The tag is the SHA-256 of the bytes (FIPS 180-2's "abc" vector), cut to 128 bits.
    @Test func theEntityTagIsTheContentsDigest() {
        #expect(ViewerFile(path: "a.txt", bytes: Array("abc".utf8)).entityTag == "\"ba7816bf8f01cfea414140de5dae2223\"")
        let long = ViewerFile(path: "b.txt", bytes: Array(String(repeating: "a", count: 1_000).utf8))
        #expect(long.entityTag == "\"41edece42d63e8d9bf515a9ba6932e1c\"")
    }

    @Test(arguments: [
        ("app.js", "text/javascript; charset=utf-8"), ("style.css", "text/css; charset=utf-8"),
        ("index.html", "text/html; charset=utf-8"), ("icon.svg", "image/svg+xml"), ("logo.png", "image/png"),
        ("data.json", "application/json"), ("font.woff2", "application/octet-stream"),
    ])
    func contentTypesFollowTheExtension(name: String, type: String) {
        #expect(ViewerFile(path: "sub/" + name, bytes: []).contentType == type)
    }

    @Test(arguments: [
        ("", "index.html"), ("app.js", "app.js"), ("css/", "css/index.html"), ("a/b-c_d.e", "a/b-c_d.e"),
    ])
    func safePathsAreKept(request: String, file: String) {
        #expect(ViewerPath.normalized(Substring(request)) == file)
    }

    @Test(arguments: ["..", "../x", "a/../b", "%2e%2e", ".env", "a/.git/config", "a\\b", "a//b", "./a", "a b", "ä.js", "a\0b"])
    func unsafePathsAreRefused(request: String) {
        #expect(ViewerPath.normalized(Substring(request)) == nil)
    }

    /// The binary alone in a fresh folder, run from there with no
    /// --public-dir: no Public/ anywhere near it, and `/` is the viewer.
    @Test func aCopiedBinaryServesTheViewerFromAnyDirectory() throws {
        let folder = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.copyItem(atPath: ChildServer.binaryPath, toPath: folder + "/larder")
        let child = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--log-level", "error"],
                                    environment: ["LARDER_PUBLIC_DIR": ""], executable: folder + "/larder", directory: folder)
        let index = try child.client().send("GET", "/")
        #expect(index.status == 200)
        #expect(index.body == Array(try #require(FileManager.default.contents(atPath: Repository.path("Public") + "/index.html"))))
        #expect(index.header("ETag") != nil)
    }

    /// --public-dir (and LARDER_PUBLIC_DIR) serve a folder instead, read on
    /// each request: an edit shows with a new ETag and no restart.
    @Test(arguments: [true, false])
    func publicDirOverridesTheBuiltInCopy(byFlag: Bool) throws {
        let folder = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/css", withIntermediateDirectories: true)
        try "<title>dev copy</title>".write(toFile: folder + "/index.html", atomically: true, encoding: .utf8)
        try "body{}".write(toFile: folder + "/css/site.css", atomically: true, encoding: .utf8)
        let child = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--log-level", "error"] + (byFlag ? ["--public-dir", folder] : []),
                                    environment: byFlag ? [:] : ["LARDER_PUBLIC_DIR": folder], directory: folder + "/css")
        let client = child.client()
        let index = try client.send("GET", "/")
        #expect(index.text == "<title>dev copy</title>")
        let css = try client.send("GET", "/viewer/css/site.css")
        #expect(css.text == "body{}")
        #expect(css.header("Content-Type") == "text/css; charset=utf-8")
        let tag = try #require(index.header("ETag"))
        #expect(try client.send("GET", "/", headers: [("If-None-Match", tag)]).status == 304)
        try "<title>edited</title>".write(toFile: folder + "/index.html", atomically: true, encoding: .utf8)
        let edited = try client.send("GET", "/", headers: [("If-None-Match", tag)])
        #expect(edited.status == 200)
        #expect(edited.text == "<title>edited</title>")
        #expect(edited.header("ETag") != tag)
        #expect(try client.send("GET", "/viewer/../index.html").status == 404)
        #expect(try client.send("GET", "/viewer/css").status == 404)
    }
}
