#!/usr/bin/env bash
# The long runs of the fault tests (docs/more-than-one-machine.md): the
# recorded histories through two larders on PostgreSQL, across a failover
# (the primary stopped hard, its synchronous standby promoted) and across
# repeated network cuts (one server's cable to the database cut for 2 s,
# healed for 2 s, over and over), each checked for linearizability. CI runs
# the same tests for 5-6 s; this runs them for LARDER_FAULT_SECONDS
# (default 60) and prints what each found. Needs root (network namespaces)
# and PostgreSQL's server binaries, as `bash .ci/run` installs them.
#
#   bash Tests/cluster/long-faults.sh            # 60 s each
#   LARDER_FAULT_SECONDS=300 bash Tests/cluster/long-faults.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export LARDER_FAULT_SECONDS="${LARDER_FAULT_SECONDS:-60}"
export LARDER_PARTITION_TESTS=1
swift build --build-tests
swift test --skip-build --no-parallel \
  --filter 'FailoverTests.aHistoryThroughTwoServersAcrossAFailoverIsLinearizable|PartitionTests.aHistoryThroughTwoServersAcrossACutIsLinearizable' \
  2>&1 | grep -E 'history \(|✔|✘|Expectation|error'
