// Where a test process keeps its scratch files: data directories, staged
// restores, child servers' `--ephemeral` stores, PostgreSQL clusters, the
// browser's profile.
//
// Why: the suite creates and deletes tens of thousands of files. On the
// ext4 of the machines it runs on (no journal), each new inode is found by
// scanning the inode table for one not deleted in the last seconds: a full
// run spent a tenth of its CPU (and half of its system time) there. A tmpfs
// has none of that, and the store's behaviour under test is the same on it
// (rename, fsync, sendfile, SIGKILL mid-write).
//
// Chosen in a constructor, before `main` and before any thread exists, so
// that `setenv` races no one: every caller of NSTemporaryDirectory() in
// this process (the servers run in-process included) and every child it
// starts inherit TMPDIR. The root is `<parent>/larder-tests-<pid>/`, where
// the parent is LARDER_TEST_SCRATCH when set, else /dev/shm when it is a
// writable tmpfs with 2 GiB free, else TMPDIR or /tmp as before. It is
// removed at exit (registered first, so it runs after every other exit
// handler, TestPostgres's server stops included); a root whose process was
// killed is swept by the next run (TestScratch.sweepStale(), in Swift).
#define _GNU_SOURCE
#include "CLarderTestScratch.h"
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define TMPFS_MAGIC_NUMBER 0x01021994

static char root[PATH_MAX];

const char *larder_test_scratch_root(void) { return root; }

static int is_roomy_tmpfs(const char *path) {
    struct statfs fs;
    struct statvfs vfs;
    if (statfs(path, &fs) != 0 || fs.f_type != TMPFS_MAGIC_NUMBER) return 0;
    // Not a noexec mount (a container's /dev/shm is one): tests run binaries copied there.
    if (statvfs(path, &vfs) != 0 || (vfs.f_flag & ST_NOEXEC)) return 0;
    return access(path, W_OK | X_OK) == 0 && (unsigned long long)vfs.f_bavail * vfs.f_frsize >= (2ULL << 30);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    remove(path);
    return 0;
}

static void remove_root(void) {
    if (root[0] != '\0') nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

__attribute__((constructor)) static void choose_scratch_root(void) {
    const char *parent = getenv("LARDER_TEST_SCRATCH");
    if (parent == NULL || parent[0] == '\0') {
        if (is_roomy_tmpfs("/dev/shm")) {
            parent = "/dev/shm";
        } else {
            parent = getenv("TMPDIR");
            if (parent == NULL || parent[0] == '\0') parent = "/tmp";
        }
    }
    mkdir(parent, 0755);
    char candidate[PATH_MAX];
    size_t length = strlen(parent);
    int written = snprintf(candidate, sizeof candidate, "%s%slarder-tests-%d/", parent,
                           (length > 0 && parent[length - 1] == '/') ? "" : "/", (int)getpid());
    if (written <= 0 || (size_t)written >= sizeof candidate) return;
    // 0755: the PostgreSQL clusters inside are run as the postgres user, who must reach them.
    if (mkdir(candidate, 0755) != 0) return;
    chmod(candidate, 0755);
    memcpy(root, candidate, (size_t)written + 1);
    setenv("TMPDIR", root, 1);
    atexit(remove_root);
}
