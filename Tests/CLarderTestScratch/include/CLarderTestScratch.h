#ifndef C_LARDER_TEST_SCRATCH_H
#define C_LARDER_TEST_SCRATCH_H

/// The directory (ending in "/") this test process keeps its scratch files
/// in, chosen before `main` and exported as TMPDIR; see scratch.c.
const char *larder_test_scratch_root(void);

#endif
