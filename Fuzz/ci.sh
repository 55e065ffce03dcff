#!/usr/bin/env bash
# The bounded fuzz run of CI (.ci/run): Fuzz/run.sh for 45 seconds, one job
# (Fuzz/run.sh alone runs as long as asked: the long runs are there).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${SECONDS_TO_RUN:-45} JOBS=1 exec Fuzz/run.sh "$@"
