#!/usr/bin/env bash
# What every package holds, staged in STAGE for a package script to add its
# own files to: STAGE/bin/larder (packaging/build-binary.sh) and the C
# libraries beside it in STAGE/lib/larder (packaging/bundle-libs.sh), the
# binary checked to say VERSION, the package's own version.
#
#   bash packaging/stage.sh STAGE VERSION
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${1:?usage: stage.sh STAGE VERSION}
version=${2:?usage: stage.sh STAGE VERSION}
bash packaging/build-binary.sh "$stage"
bash packaging/bundle-libs.sh "$stage"
binary_version=$("$stage/bin/larder" --version)
[ "$binary_version" = "$version" ] || {
  echo "stage: larder --version says $binary_version, the package says $version" >&2; exit 1; }
