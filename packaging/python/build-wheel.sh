#!/usr/bin/env bash
# Builds the `larder` wheel (pip install it and `larder` is on the venv's
# PATH, with the pytest plugin), and prints its path as the last line.
#
#   bash packaging/python/build-wheel.sh [DIST]     # default: packaging/dist
#
# The binary and its C libraries come from packaging/stage.sh (a static
# release build, about 4 minutes the first time; LARDER_STATIC_BINARY=path
# reuses one), the wheel from hatchling, which pip fetches (build isolation).
set -euo pipefail
cd "$(dirname "$0")/../.."
dist=$(realpath -m "${1:-packaging/dist}")
stage=$(mktemp -d /tmp/larder-wheel.XXXXXX)
trap 'rm -rf "$stage"' EXIT

package_version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' clients/python/src/pytest_larder/__init__.py)
bash packaging/stage.sh "$stage" "$package_version"
cp packaging/python/pyproject.toml packaging/python/hatch_build.py packaging/python/README.md "$stage/"
mkdir -p "$stage/src"
cp -r clients/python/src/pytest_larder "$stage/src/"
find "$stage/src" -name __pycache__ -prune -exec rm -rf {} +

# manylinux_2_X: X is the newest glibc symbol version any file asks for.
glibc=$(for f in "$stage/bin/larder" "$stage"/lib/larder/*; do objdump -T "$f"; done \
  | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2 -n -u | tail -1)
export LARDER_WHEEL_PLATFORM="manylinux_2_${glibc#GLIBC_2.}_$(uname -m)"

mkdir -p "$dist"
python3 -m pip wheel --quiet --no-deps --wheel-dir "$dist" "$stage" >&2
wheel="$dist/larder-$package_version-py3-none-$LARDER_WHEEL_PLATFORM.whl"
[ -f "$wheel" ] || { echo "build-wheel: expected $wheel; $dist has: $(ls "$dist")" >&2; exit 1; }
echo "build-wheel: $(du -h "$wheel" | cut -f1) (the binary $(du -h "$stage/bin/larder" | cut -f1), bundled libraries $(du -sh "$stage/lib/larder" | cut -f1))" >&2
echo "$wheel"
