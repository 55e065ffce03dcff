#!/usr/bin/env bash
# The C libraries a packaged `larder` (OUT/bin/larder) may need that a Linux
# machine cannot be counted on to have, copied into OUT/lib/larder (its
# RPATH), as auditwheel bundles a wheel's: zlib, and libpq with everything
# it loads. Left out, as the manylinux policies leave them to the system:
# glibc's libraries, libstdc++ and libgcc_s.
#
#   bash packaging/bundle-libs.sh OUT
set -euo pipefail
out=${1:?usage: bundle-libs.sh OUT}
# awk reads to the end (no `exit`): an early exit would SIGPIPE ldconfig,
# and under pipefail that fails the script (CI saw exit 141 here).
libpq=$(ldconfig -p | awk '/libpq\.so\.5 .*x86-64/ && !found {print $NF; found = 1}')
[ -n "$libpq" ] || { echo "bundle-libs: libpq.so.5 not found (apt-get install libpq5)" >&2; exit 1; }
mkdir -p "$out/lib/larder"
system='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libresolv|libutil|libnsl|libgcc_s|libstdc\+\+)\.so'
{
  ldd "$out/bin/larder"
  echo "libpq.so.5 => $libpq (0)"
  ldd "$libpq"
} | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u | while read -r name path; do
  if [[ ! $name =~ $system ]]; then cp -L "$path" "$out/lib/larder/$name"; fi
done
chmod 0644 "$out/lib/larder"/*
