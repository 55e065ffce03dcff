#!/usr/bin/env bash
# Ceph's s3-tests (https://github.com/ceph/s3-tests), unpatched, against
# Larder's S3 face, and optionally against moto's server in the same run:
# the public suite S3-compatible servers are judged by (docs/s3.md says
# which of its features Larder leaves out, and why).
#
#   bash Benchmarks/s3-tests.sh SUITE_DIR              # in scope (below), about 3 minutes
#   bash Benchmarks/s3-tests.sh SUITE_DIR --all        # the whole functional suite
#   bash Benchmarks/s3-tests.sh SUITE_DIR --moto       # moto's server too, same selection
#   bash Benchmarks/s3-tests.sh SUITE_DIR -k multipart # any further pytest arguments
#
# SUITE_DIR is a checkout of ceph/s3-tests (`git clone`, or a snapshot:
# `git --git-dir=<mirror> archive HEAD | tar -x -C SUITE_DIR`). In scope is
# the functional suite (test_s3.py, test_headers.py) without the markers of
# what Larder answers 501 by design: logging, website, lifecycle, object
# lock, bucket policies and other IAM, replication, versioning beyond the
# null version, S3 Select, SNS, append, storage classes and tests AWS
# itself fails (`fails_on_aws`), and without the unmarked tests of those
# features and of ACL enforcement, by name (OUT_OF_SCOPE_NAMES below). Prints passed/failed/errors per server and
# writes each run's JUnit XML and its failures (test, first line of the
# reason) to .build/benchmarks/s3-tests-<server>-<date>.{xml,txt}.
#
# LARDER=path uses that binary (SKIP_BUILD=1 the .build/release one as it is).
# Installs the suite's Python requirements (and moto[server] with --moto) with
# pip when missing. Not part of CI: the run takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SUITE=${1:?usage: $0 SUITE_DIR [--all] [--moto] [pytest args...]}
shift
SUITE=$(cd "$SUITE" && pwd)
[ -f "$SUITE/s3tests/functional/test_s3.py" ] || { echo "$SUITE is not a checkout of ceph/s3-tests" >&2; exit 2; }
SCOPE=in-scope
MOTO=""
EXTRA=()
for arg in "$@"; do
  case $arg in
    --all) SCOPE=all ;;
    --moto) MOTO=1 ;;
    *) EXTRA+=("$arg") ;;
  esac
done

OUT_OF_SCOPE="bucket_logging or bucket_logging_cleanup or fails_without_logging_rollover or s3website
 or s3website_routing_rules or s3website_redirect_location or lifecycle or lifecycle_expiration
 or lifecycle_transition or cloud_transition or cloud_restore or object_lock or bucket_policy
 or user_policy or group_policy or role_policy or session_policy or iam_account or iam_cross_account
 or iam_role or iam_tenant or iam_user or abac_test or versioning or delete_marker or s3select or sns
 or appendobject or storage_class or test_of_sts or webidentity_test or fails_on_aws"
# The same features in tests that carry no marker for them, by name:
# versioning, object lock, policies and public-access blocks, object
# ownership controls, and ACL enforcement (another user's or an anonymous
# request refused or allowed by an ACL: Larder keeps no ACLs).
OUT_OF_SCOPE_NAMES="versioning or versioned or object_lock or policy or public_block or block_public
 or ignore_public_acls or ownership or bucket_owner_enforced or bucket_owner_preferred or object_writer
 or access_bucket or acl_grant or acl_revoke or anonymous or anon_put or unreadable or not_owned
 or nonowner or torrent"
MARKERS=()
[ "$SCOPE" = in-scope ] && MARKERS=(-m "not ($(echo $OUT_OF_SCOPE))" -k "not ($(echo $OUT_OF_SCOPE_NAMES))")

. "$ROOT/Benchmarks/common.sh"
release_larder

need=()
for pair in boto3=boto3 munch=munch gevent=gevent isodate=isodate requests=requests pytz=pytz \
            httplib2=httplib2 lxml=lxml yaml=pyyaml pytest=pytest; do
  python3 -c "import ${pair%%=*}" 2>/dev/null || need+=("${pair#*=}")
done
[ -n "$MOTO" ] && { python3 -c "import moto.server, flask_cors" 2>/dev/null || need+=("moto[server]"); }
if [ ${#need[@]} -gt 0 ]; then
  echo "pip installing ${need[*]}" >&2
  python3 -m pip install -q "${need[@]}"
fi

WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
OUTDIR=$ROOT/.build/benchmarks
mkdir -p "$OUTDIR"
STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)

# The suite's three users (main, alt, tenant), each its own access key.
cat > "$WORK/credentials" <<'KEYS'
0555b35654ad1656d804 h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q==
NOPQRSTUVWXYZABCDEFG nopqrstuvwxyzabcdefghacKndMfqvjdJpBUmFMm/Pgd9fvM2SfaXTGVW4Nd
HIJKLMNOPQRSTUVWXYZA opqrstuvwxyzabcdefghijklmnopqrstuvwxyzab
KEYS

# run_suite NAME PORT: the suite against 127.0.0.1:PORT; prints its tally.
run_suite() {
  local name=$1 port=$2
  cat > "$WORK/$name.conf" <<CONF
[DEFAULT]
host = 127.0.0.1
port = $port
is_secure = False
ssl_verify = False

[fixtures]
bucket prefix = s3t-{random}-
iam name prefix = s3-tests-
iam path prefix = /s3-tests/

[s3 main]
display_name = M. Tester
user_id = testid
email = tester@ceph.com
api_name = default
access_key = 0555b35654ad1656d804
secret_key = h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q==
kms_keyid = testkey-1
kms_keyid2 = testkey-2

[s3 alt]
display_name = john.doe
email = john.doe@example.com
user_id = 56789abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234
access_key = NOPQRSTUVWXYZABCDEFG
secret_key = nopqrstuvwxyzabcdefghacKndMfqvjdJpBUmFMm/Pgd9fvM2SfaXTGVW4Nd

[s3 tenant]
display_name = testx\$tenanteduser
user_id = 9876543210abcdef0123456789abcdef0123456789abcdef0123456789abcdef
access_key = HIJKLMNOPQRSTUVWXYZA
secret_key = opqrstuvwxyzabcdefghijklmnopqrstuvwxyzab
email = tenanteduser@example.com
tenant = testx

[iam]
email = s3@example.com
user_id = 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
access_key = ABCDEFGHIJKLMNOPQRST
secret_key = abcdefghijklmnopqrstuvwxyzabcdefghijklmn
display_name = youruseridhere

[iam root]
access_key = AAAAAAAAAAAAAAAAAAaa
secret_key = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
user_id = RGW11111111111111111
email = account1@ceph.com

[iam alt root]
access_key = BBBBBBBBBBBBBBBBBBbb
secret_key = bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
user_id = RGW22222222222222222
email = account2@ceph.com
CONF
  local xml=$OUTDIR/s3-tests-$name-$SCOPE-$STAMP.xml
  echo "s3-tests ($SCOPE) against $name on port $port" >&2
  (cd "$SUITE" && S3TEST_CONF="$WORK/$name.conf" timeout 1800 python3 -m pytest -q -p no:cacheprovider \
     --junitxml "$xml" "${MARKERS[@]}" s3tests/functional/test_s3.py s3tests/functional/test_headers.py \
     "${EXTRA[@]}" >"$WORK/$name.pytest.log" 2>&1) || true
  python3 "$ROOT/Benchmarks/s3_tests_tally.py" "$name" "$xml" "${xml%.xml}.txt"
}

port=$(free_port)
"$LARDER" --ephemeral --port 0 --log-level warning --s3-port "$port" --s3-credentials "$WORK/credentials" \
  >"$WORK/larder.out" 2>"$WORK/larder.log" &
PIDS+=($!)
for _ in $(seq 1 200); do grep -q "S3 listening" "$WORK/larder.log" "$WORK/larder.out" 2>/dev/null && break; sleep 0.05; done
run_suite larder "$port"

if [ -n "$MOTO" ]; then
  port=$(free_port)
  python3 -m moto.server -H 127.0.0.1 -p "$port" >"$WORK/moto.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 200); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
  run_suite moto "$port"
fi
