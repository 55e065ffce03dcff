#!/usr/bin/env bash
# Builds the libFuzzer target over the HTTP request parser:
#   Fuzz/.build/http-parser-fuzz
# swift-log's Logging (from SwiftPM's checkout), LarderModel and
# LarderSupport are compiled as plain modules (not instrumented: nothing of
# them is fuzzed). LarderHTTP is compiled as its own
# module, and the harness (Fuzz/Harness, the SwiftPM target
# LarderHTTPFuzzHarness) with the entry point (Fuzz/HTTPParserFuzz) as
# another, both with -sanitize=fuzzer,address, which instruments them for
# coverage and AddressSanitizer; the link adds libFuzzer's main (bundled with
# the Swift toolchain on Linux: nothing to install). Both share one
# -package-name, as SwiftPM gives them: the harness reaches the parser through
# LarderHTTP's `package` declarations, so the product carries no fuzzing code.
# -O keeps Swift's overflow and bounds traps (unlike -Ounchecked), so an
# arithmetic overflow is a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
out=Fuzz/.build
mkdir -p "$out"
swiftc=${SWIFTC:-swiftc}

# LarderSupport logs through swift-log: its sources as SwiftPM resolved them.
logging=.build/checkouts/swift-log/Sources/Logging
[ -d "$logging" ] || swift package resolve >/dev/null
[ -d "$logging" ] || { echo "fuzz: no swift-log checkout at $logging" >&2; exit 1; }

# Rebuild only when a source changed.
stamp="$out/sources.sha"
http_sources=$(find Sources/LarderHTTP -name '*.swift' | sort)
sum=$(cat "$logging"/*.swift "$logging"/*/*.swift Sources/LarderModel/*.swift Sources/LarderSupport/*.swift \
          $http_sources Sources/CEpoll/* Fuzz/Harness/*.swift Fuzz/HTTPParserFuzz/*.swift Fuzz/build.sh | sha256sum | cut -d' ' -f1)
if [ -x "$out/http-parser-fuzz" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
  echo "fuzz: $out/http-parser-fuzz is up to date"
  exit 0
fi

echo "fuzz: building $out/http-parser-fuzz"
# As swift-log's Package.swift builds it: Swift 6, `package` access within it.
"$swiftc" -O -parse-as-library -wmo -swift-version 6 -module-name Logging -package-name swift_log \
  -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility \
  -enable-upcoming-feature InternalImportsByDefault \
  -emit-module -emit-module-path "$out/Logging.swiftmodule" \
  -c "$logging"/*.swift "$logging"/*/*.swift -o "$out/Logging.o"
"$swiftc" -O -parse-as-library -wmo -module-name LarderModel -package-name larder \
  -emit-module -emit-module-path "$out/LarderModel.swiftmodule" \
  -c Sources/LarderModel/*.swift -o "$out/LarderModel.o"
"$swiftc" -O -parse-as-library -wmo -module-name LarderSupport -package-name larder -I "$out" \
  -emit-module -emit-module-path "$out/LarderSupport.swiftmodule" \
  -c Sources/LarderSupport/*.swift -o "$out/LarderSupport.o"
# Linked from inside $out: the driver leaves its module files in the
# working directory. ld.gold's "Cannot export local symbol" notes about
# ASan's helpers are noise and filtered out.
root=$PWD
# LarderHTTP's event loops import CEpoll (a module map over epoll's headers).
fuzzflags=(-O -g -parse-as-library -wmo -package-name larder -sanitize=fuzzer,address -I "$root/Sources/CEpoll")
if ! (cd "$out" && "$swiftc" "${fuzzflags[@]}" -module-name LarderHTTP -I . \
        -emit-module -emit-module-path LarderHTTP.swiftmodule \
        -c $(printf '%s\n' $http_sources | sed "s|^|$root/|") -o LarderHTTP.o \
      && "$swiftc" "${fuzzflags[@]}" -module-name LarderHTTPFuzzHarness -I . \
        "$root"/Fuzz/Harness/*.swift "$root"/Fuzz/HTTPParserFuzz/*.swift \
        LarderHTTP.o Logging.o LarderModel.o LarderSupport.o \
        -o http-parser-fuzz) > "$out/link.log" 2>&1; then
  grep -v "Cannot export local symbol" "$out/link.log" >&2
  exit 1
fi
grep -v "Cannot export local symbol" "$out/link.log" || true
echo "$sum" > "$stamp"
echo "fuzz: built $out/http-parser-fuzz"
