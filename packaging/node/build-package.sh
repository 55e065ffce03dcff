#!/usr/bin/env bash
# Builds the `larder` npm package (clients/node with the binary: `npm
# install` it and `npx larder` runs, and `import { useLarder } from
# 'larder'` starts that binary), and prints the tarball's path as the last line.
#
#   bash packaging/node/build-package.sh [DIST]     # default: packaging/dist
#
# The binary and its libraries as in the wheel (packaging/stage.sh;
# LARDER_STATIC_BINARY=path reuses a binary).
set -euo pipefail
cd "$(dirname "$0")/../.."
dist=$(realpath -m "${1:-packaging/dist}")
stage=$(mktemp -d /tmp/larder-npm.XXXXXX)
trap 'rm -rf "$stage"' EXIT

package_version=$(node -p 'require(process.argv[1]).version' "$PWD/clients/node/package.json")
bash packaging/stage.sh "$stage" "$package_version"
cp clients/node/package.json clients/node/larder.mjs clients/node/README.md "$stage/"

mkdir -p "$dist"
tarball=$(cd "$stage" && npm pack --silent --pack-destination "$dist" | tail -1)
echo "build-package: $(du -h "$dist/$tarball" | cut -f1)" >&2
echo "$dist/$tarball"
