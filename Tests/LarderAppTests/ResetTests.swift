import Foundation
import LarderModel
import LarderTestSupport
import LarderWire
import Testing

/// `DELETE /store/` swaps in a fresh generation in one rename and deletes
/// the old one in the background; a crash during that delete brings no old
/// key back and loses no newer write.
@Suite(.blockingLane) struct ResetTests {
    @Test(.diskStoreOnly("looks at the disk store's generations")) func resetSwitchesToAnEmptyGenerationAndReapsTheOldOneInTheBackground() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        for i in 0..<500 { try client.put("many/\(i % 7)/k\(i)", "v\(i)") }
        let before = try FileManager.default.destinationOfSymbolicLink(atPath: server.dataDirectory + "/values")
        #expect(try client.deletePrefix("").json?["deleted"] as? Int == 500)
        let after = try FileManager.default.destinationOfSymbolicLink(atPath: server.dataDirectory + "/values")
        #expect(after != before)
        // The new generation starts empty; the request did not delete 500 files itself.
        #expect(try FileManager.default.contentsOfDirectory(atPath: server.dataDirectory + "/" + after).isEmpty)
        server.diskStore?.drainBackgroundWork()
        #expect(!FileManager.default.fileExists(atPath: server.dataDirectory + "/" + before))
        #expect(try ModelJSON.decode(ListingPage.self, from: Data(try client.list().body)).keys.isEmpty)
    }

    @Test func aCrashDuringTheBackgroundDeleteBringsNothingBack() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try TestServer(dataDirectory: dir)
        let client = server.client()
        for i in 0..<50 { try client.put("old/k\(i)", "old") }
        let oldGeneration = try FileManager.default.destinationOfSymbolicLink(atPath: dir + "/values")
        // Keep a copy of the old generation: what a crash mid-delete leaves behind.
        try FileManager.default.copyItem(atPath: dir + "/" + oldGeneration, toPath: dir + "/leftover")
        #expect(try client.deletePrefix("").status == 200)
        try client.put("new/k", "new")
        server.stop(keepData: true)
        try FileManager.default.moveItem(atPath: dir + "/leftover", toPath: dir + "/" + oldGeneration)

        let restarted = try TestServer(dataDirectory: dir)
        defer { restarted.stop() }
        #expect(try restarted.client().get("new/k").text == "new")
        #expect(try restarted.client().get("old/k1").status == 404)
        restarted.diskStore?.drainBackgroundWork()
        #expect(!FileManager.default.fileExists(atPath: dir + "/" + oldGeneration), "the leftover is removed at start")
    }

    @Test(.diskStoreOnly("looks at the disk store's generations")) func resetNeverReusesALeftoverGenerationQueuedForDeletion() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A crash inside a reset left an empty gen-2 beside the live gen-1.
        var first: TestServer? = try TestServer(dataDirectory: dir)
        try first!.client().put("old", "1")
        first!.stop(keepData: true)
        first = nil
        try FileManager.default.createDirectory(atPath: dir + "/gen-2", withIntermediateDirectories: false)
        // Ahead of it in the reaper's queue, a big leftover keeps gen-2 around
        // while the reset below runs.
        try FileManager.default.createDirectory(atPath: dir + "/gen-10", withIntermediateDirectories: false)
        for i in 0..<3000 { _ = FileManager.default.createFile(atPath: dir + "/gen-10/f\(i)", contents: nil) }

        let server = try TestServer(dataDirectory: dir)
        let client = server.client()
        #expect(try client.deletePrefix("").json?["deleted"] as? Int == 1)
        #expect(try client.put("new", "2").status == 201)
        server.diskStore?.drainBackgroundWork()
        #expect(try client.get("new").text == "2")
        server.stop(keepData: true)
        let again = try TestServer(dataDirectory: dir)
        defer { again.stop() }
        #expect(try again.client().get("new").text == "2")
        #expect(try again.client().get("old").status == 404)
    }
}
