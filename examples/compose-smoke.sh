#!/bin/sh
# A client of Larder, as docker-compose.yml's `example` service runs it (in
# curlimages/curl: POSIX sh and curl, nothing else). It waits for the
# server, writes a value with the token, reads it back, and reads a fixture.
#
#   LARDER_URL=http://127.0.0.1:8080 LARDER_TOKEN=dev-token FIXTURES_DIR=fixtures sh examples/compose-smoke.sh
#
# LARDER_URL      the server (compose: http://larder:8080)
# LARDER_TOKEN    sent as `Authorization: Bearer …` (a server without a token ignores it)
# FIXTURES_DIR    the fixtures the server was started with, to compare a fixture's bytes
# SMOKE_FIXTURES  require: a fixture must be served; skip: do not look;
#                 auto (default): check it when the server serves fixtures
#                 (`Larder-Source: fixture`), else say it was skipped
# SMOKE_TOKEN     require: a request without the token must get 401;
#                 auto (default): say what it got
# Exits 0 when every check passed; prints one line per check.
set -eu

url=${LARDER_URL:-http://127.0.0.1:8080}
token=${LARDER_TOKEN:-}
fixtures=${FIXTURES_DIR:-/fixtures}
fixture_mode=${SMOKE_FIXTURES:-auto}
token_mode=${SMOKE_TOKEN:-auto}
tmp=$(mktemp -d)
created=
# A check that fails leaves the store as it was too.
trap 'if [ -n "$created" ]; then call -X DELETE "$url/store/$created" > /dev/null || true; fi; rm -rf "$tmp"' EXIT
passed=0

pass() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAILED: $*" >&2; exit 1; }
# curl with the token; prints the status code, the body goes to $tmp/body, the head to $tmp/head.
call() {
  if [ -n "$token" ]; then
    curl -sS -o "$tmp/body" -D "$tmp/head" -w '%{http_code}' -H "Authorization: Bearer $token" "$@"
  else
    curl -sS -o "$tmp/body" -D "$tmp/head" -w '%{http_code}' "$@"
  fi
}
header() { tr -d '\r' < "$tmp/head" | awk -v name="$1" 'tolower($1) == tolower(name) ":" {sub(/^[^:]*: */, ""); print; exit}'; }

# The server may still be starting (outside compose there is no depends_on).
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/healthz" || true)" = 200 ]; do
  i=$((i + 1))
  [ $i -lt 60 ] || fail "$url/healthz did not answer 200 within 30 s"
  sleep 0.5
done
pass "$url/healthz answers 200"

# A value, written with the token and read back.
key="compose-smoke/$(date +%s)-$$"
value='{"from":"compose-smoke","ok":true}'
code=$(call -X PUT -H 'Content-Type: application/json' --data-binary "$value" "$url/store/$key")
[ "$code" = 201 ] || fail "PUT /store/$key answered $code: $(cat "$tmp/body")"
etag=$(header ETag)
[ -n "$etag" ] || fail "PUT /store/$key sent no ETag"
created=$key
pass "PUT /store/$key: 201, ETag $etag"

code=$(call "$url/store/$key")
[ "$code" = 200 ] || fail "GET /store/$key answered $code"
[ "$(cat "$tmp/body")" = "$value" ] || fail "GET /store/$key returned $(cat "$tmp/body")"
[ "$(header ETag)" = "$etag" ] || fail "GET /store/$key has ETag $(header ETag), not $etag"
[ "$(header Content-Type)" = application/json ] || fail "GET /store/$key has Content-Type $(header Content-Type)"
pass "GET /store/$key: the same bytes, ETag and Content-Type"

# Without the token.
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/store/$key")
if [ "$code" = 401 ]; then
  pass "GET without the token: 401"
elif [ "$token_mode" = require ]; then
  fail "GET without the token answered $code, not 401"
else
  echo "skipped: the server takes requests without a token ($code): no token is set, or this build has no --token"
fi

# A fixture: the key is the file's path under the fixtures folder.
if [ "$fixture_mode" != skip ]; then
  code=$(call "$url/store/users/ada.json")
  source=$(header Larder-Source)
  if [ "$code" = 200 ] && [ "$source" = fixture ]; then
    if [ -f "$fixtures/users/ada.json" ]; then
      cmp -s "$tmp/body" "$fixtures/users/ada.json" || fail "GET /store/users/ada.json differs from $fixtures/users/ada.json"
    elif [ "$fixture_mode" = require ]; then
      fail "no $fixtures/users/ada.json to compare the fixture with (FIXTURES_DIR)"
    else
      echo "note: no $fixtures/users/ada.json here, so the fixture's bytes are not compared"
    fi
    [ "$(header Content-Type)" = application/json ] || fail "the fixture users/ada.json has Content-Type $(header Content-Type)"
    pass "GET /store/users/ada.json: the fixture's bytes (Larder-Source: fixture, application/json)"
  elif [ "$fixture_mode" = require ]; then
    fail "GET /store/users/ada.json answered $code with Larder-Source '$source', not a fixture"
  else
    echo "skipped: the server serves no fixtures (GET /store/users/ada.json: $code): not started with --fixtures, or this build has none"
  fi
fi

# Leave the store as it was.
code=$(call -X DELETE "$url/store/$key")
[ "$code" = 204 ] || fail "DELETE /store/$key answered $code"
created=
pass "DELETE /store/$key: 204"
echo "compose smoke: $passed checks passed against $url"
