#!/usr/bin/env bash
# Installs what `swift test` uses on a fresh Debian machine (as root): the
# C libraries the server builds against, the programs the tests run beside
# it (curl, python3, node, PostgreSQL, Chromium and chromedriver, rclone),
# and the Python modules of Tests/requirements.txt. Does only what is
# missing: a second run takes about a second. The README's test command
# (Tests/run.sh) and CI (.ci/run) call it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
  echo "provision: run as root (apt-get and pip install system-wide)" >&2
  exit 1
fi
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

need=()
pkg-config --exists zlib 2>/dev/null || need+=(zlib1g-dev pkg-config)
command -v gzip >/dev/null || need+=(gzip)
# The docs' examples run with bash and curl; the cross-process CAS test runs python3 clients.
command -v curl >/dev/null || need+=(curl)
command -v python3 >/dev/null || need+=(python3)
python3 -c "import venv, ensurepip" 2>/dev/null || need+=(python3-venv)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
# The node:test helper's tests (clients/node).
command -v node >/dev/null || need+=(nodejs)
# npm packs and installs the npm package (.ci/packages).
command -v npm >/dev/null || need+=(npm)
# The viewer's browser tests (ViewerBrowserTests) drive Debian's Chromium through chromedriver.
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
# rclone, one of the S3 clients the S3 face is tested with (Tests/s3/test_rclone.py).
command -v rclone >/dev/null || need+=(rclone)
# The PostgreSQL store's tests start throwaway servers (TestPostgres) from
# PostgreSQL's own binaries, which Debian keeps off PATH; the store is built
# against libpq's header and loads the library when it is used.
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v pg_ctl >/dev/null || need+=(postgresql)
pkg-config --exists libpq 2>/dev/null || need+=(libpq-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "provision: apt-get installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi


# The Python modules, pinned together in one file.
if ! python3 - Tests/requirements.txt <<'PY'
import sys
from importlib.metadata import version, PackageNotFoundError
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, wanted = line.split("==")
    try:
        if version(name) != wanted:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
then
  echo "provision: pip installing Tests/requirements.txt"
  # Debian's own python3 is "externally managed" (PEP 668): these go in
  # beside its packages all the same, as the tests run `python3` itself.
  as_root env PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q -r Tests/requirements.txt
fi
