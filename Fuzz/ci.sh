#!/usr/bin/env bash
# The bounded fuzz run of CI (.ci/run): Fuzz/run.sh for 90 seconds, one job.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${SECONDS_TO_RUN:-90} JOBS=1 exec Fuzz/run.sh "$@"
