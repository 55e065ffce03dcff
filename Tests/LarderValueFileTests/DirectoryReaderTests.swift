import Foundation
@testable import LarderValueFile
import LarderTestSupport
import Testing

/// `DirectoryReader`, the one reader of `dirent`s. Its names come from
/// the entry in place: names of every length, the longest a file system
/// allows among them, land at the end of readdir's buffer, where a copy of
/// the whole `d_name` read past it (`bash .ci/asan` reports any such read).
@Suite(.blockingLane) struct DirectoryReaderTests {
    @Test func everyEntryOnceWithItsNameAndKind() throws {
        let root = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        // 3,000 files with names of 2 to 255 bytes (some not UTF-8), and
        // directories among them: many buffers of entries, each ending
        // on a different length.
        var files = Set<[UInt8]>(), directories = Set<[UInt8]>()
        for i in 0..<3_000 {
            // Unique by the number before the "-"; padded to the length.
            var name = Array(String(i, radix: 36).utf8) + [UInt8(ascii: "-")]
            let length = max(name.count, 1 + (i * 37) % 255)
            name += [UInt8](repeating: i % 7 == 0 ? 0xE9 : UInt8(ascii: "x"), count: length - name.count)
            let path = Array(root.utf8) + [UInt8(ascii: "/")] + name
            if i % 10 == 0 {
                #expect(path.withUnsafeBufferPointer { mkdirBytes($0) } == 0)
                directories.insert(name)
            } else {
                #expect(path.withUnsafeBufferPointer { createBytes($0) } == 0)
                files.insert(name)
            }
        }
        let reader = try #require(try DirectoryReader(root))
        var seenFiles = Set<[UInt8]>(), seenDirectories = Set<[UInt8]>()
        while let entry = reader.next() {
            let (inserted, _) = entry.isDirectory ? seenDirectories.insert(entry.name) : seenFiles.insert(entry.name)
            #expect(inserted, "\(entry.name.count)-byte name read twice")
        }
        #expect(seenFiles == files)
        #expect(seenDirectories == directories)
        #expect(files.contains { $0.count == 255 })
        // `POSIX.directoryEntries` is the same, held in an array.
        #expect(Set(try #require(try POSIX.directoryEntries(root)).map(\.name)) == files.union(directories))
    }

    @Test func aMissingDirectoryIsNilAndAFileIsToo() throws {
        let root = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(try DirectoryReader(root + "/absent") == nil)
        #expect(FileManager.default.createFile(atPath: root + "/file", contents: Data("x".utf8)))
        #expect(try DirectoryReader(root + "/file") == nil)
        let empty = try #require(try DirectoryReader(root + "/"))
        var names: [[UInt8]] = []
        while let entry = empty.next() { names.append(entry.name) }
        #expect(names == [Array("file".utf8)])
    }

    private func mkdirBytes(_ path: UnsafeBufferPointer<UInt8>) -> Int32 {
        withCString(path) { mkdir($0, 0o755) }
    }

    private func createBytes(_ path: UnsafeBufferPointer<UInt8>) -> Int32 {
        withCString(path) { p in
            let fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0o644)
            guard fd >= 0 else { return -1 }
            return close(fd)
        }
    }

    /// A path's bytes as a C string (a name need not be UTF-8, so not through `String`).
    private func withCString<T>(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (UnsafePointer<CChar>) -> T) -> T {
        let terminated = Array(bytes) + [0]
        return terminated.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) } }
    }
}
