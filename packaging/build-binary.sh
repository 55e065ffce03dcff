#!/usr/bin/env bash
# The self-contained `larder` that the image, the wheel and the npm package
# carry: the Swift runtime linked in statically (--static-swift-stdlib), no
# Foundation ICU data (the server's targets import FoundationEssentials), and
# an RPATH of `$ORIGIN/../lib/larder`, where the packages put the C libraries
# it may load (zlib; libpq and what it needs, loaded only by the PostgreSQL
# store). On the system's libraries otherwise: libc, libm, libstdc++, libgcc_s.
#
#   bash packaging/build-binary.sh OUT   # OUT/bin/larder, stripped
#
# With LARDER_STATIC_BINARY=path, that binary (built by this script before,
# e.g. the image's) is used instead of building: CI takes it from the image.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: build-binary.sh OUT}
mkdir -p "$out/bin"
if [ -n "${LARDER_STATIC_BINARY:-}" ]; then
  install -m 0755 "$LARDER_STATIC_BINARY" "$out/bin/larder"
else
  # DT_RPATH, not RUNPATH (--disable-new-dtags): it also applies to what the
  # loaded libraries load in turn (libpq's OpenSSL, Kerberos, LDAP).
  swift build -c release --static-swift-stdlib --product larder --scratch-path "${LARDER_STATIC_SCRATCH:-.build-static}" \
    -Xlinker --disable-new-dtags -Xlinker -rpath -Xlinker '$ORIGIN/../lib/larder' >&2
  install -m 0755 "${LARDER_STATIC_SCRATCH:-.build-static}/release/larder" "$out/bin/larder"
fi
strip "$out/bin/larder"
# Nothing from the toolchain: the binary must run where Swift is not installed.
if ldd "$out/bin/larder" | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime|/swift/'; then
  echo "build-binary: $out/bin/larder links the Swift toolchain's libraries (above)" >&2
  exit 1
fi
# grep without -q: -q stops at the first match and can SIGPIPE readelf.
readelf -d "$out/bin/larder" | grep 'RPATH.*\$ORIGIN/../lib/larder' >/dev/null || {
  echo "build-binary: $out/bin/larder has no RPATH \$ORIGIN/../lib/larder" >&2; exit 1; }
