#!/usr/bin/env bash
# The README's test command: installs what the tests use (Tests/provision.sh:
# Debian's packages and Tests/requirements.txt, only what is missing), then
# runs `swift test` with any arguments given. The first run on a fresh
# machine downloads about 1 GB (Chromium, PostgreSQL, the Python modules)
# and builds everything: allow 10 to 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Tests/provision.sh
exec swift test "$@"
