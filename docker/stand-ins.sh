#!/usr/bin/env bash
# Local stand-ins for the images the Dockerfile and docker-compose.yml name,
# for a machine whose Docker engine reaches no registry (CI, the development
# machines). Each one is made from Debian's own packages under the same name
# and tag, so that the Dockerfile and docker-compose.yml build and run as
# they are:
#
#   debian:bookworm-slim    debootstrap --variant=minbase bookworm, imported
#                           (`docker import`), slimmed as debian's -slim is
#                           (no docs, man pages or locales; dpkg told to keep
#                           them out)
#   swift:<6.x>-bookworm    that base, the packages the official swift image
#                           installs for a build, this machine's toolchain
#                           (/opt/swift, without the debugger, the language
#                           server and embedded Swift) in /usr, and this
#                           machine's Swift package mirrors (/opt/swift-packages)
#                           with the same `url.<mirror>.insteadOf` git setting:
#                           a build stage reaches no GitHub either
#   postgres:15-bookworm    that base and Debian's postgresql-15, with an
#                           entrypoint that, like the official image's, creates
#                           the cluster on first start from POSTGRES_PASSWORD,
#                           POSTGRES_USER and POSTGRES_DB, listens on all
#                           addresses with password (scram) auth, and has
#                           pg_isready on PATH
#   curlimages/curl:<tag>   that base and Debian's curl, as the unprivileged
#                           curl_user (uid 100), ENTRYPOINT curl
#
# An image that is already there is left alone; one that `docker pull` gets
# is used as it is (a machine that reaches Docker Hub makes no stand-ins).
# The debootstrap tree is cached as a tarball in $LARDER_STANDIN_CACHE
# (default /var/cache/larder-stand-ins); a second run with the images still
# there takes about a second.
#
#   bash docker/stand-ins.sh [--list] [--rebuild]
#
#   --list     print the images the two files name, and stop
#   --rebuild  remove the stand-ins (those labelled larder.stand-in) first
#
# Needs root (debootstrap) and a Docker engine.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${LARDER_STANDIN_CACHE:-/var/cache/larder-stand-ins}
mirror=${LARDER_DEBIAN_MIRROR:-http://deb.debian.org/debian}
label=larder.stand-in=1
docker=${DOCKER:-docker}

# The images to have: the Dockerfile's FROM lines (their ARG defaults) and
# every compose service's `image:` that is not built here.
images() {
  python3 - <<'PY'
import re
args, froms = {}, []
for line in open("Dockerfile"):
    m = re.match(r"\s*ARG\s+(\w+)=(\S+)", line)
    if m: args[m.group(1)] = m.group(2)
    m = re.match(r"\s*FROM\s+(\S+)", line, re.I)
    if m: froms.append(re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda v: args[v.group(1) or v.group(2)], m.group(1)))
stages = set()
for line in open("Dockerfile"):
    m = re.match(r"\s*FROM\s+\S+\s+AS\s+(\S+)", line, re.I)
    if m: stages.add(m.group(1))
names = [f for f in froms if f not in stages and f != "scratch"]
try:
    import yaml
    services = yaml.safe_load(open("docker-compose.yml"))["services"]
    names += [s["image"] for s in services.values() if "image" in s and "build" not in s]
except ImportError:  # without PyYAML: the `image:` lines of services that are not built
    text = open("docker-compose.yml").read()
    for block in re.split(r"\n  (?=[\w-]+:\n)", text):
        if "\n    build:" not in block:
            names += re.findall(r"\n    image:\s*(\S+)", block)
for n in dict.fromkeys(names): print(n)
PY
}

log() { echo "stand-ins: $*"; }
have() { $docker image inspect "$1" >/dev/null 2>&1; }

base_image=debian:bookworm-slim

make_debian() { # $1: the name to give it
  local tarball=$cache/bookworm-minbase.tar
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null || { export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; apt-get install -y -qq debootstrap >/dev/null; }
    mkdir -p "$cache"
    local root
    root=$(mktemp -d "$cache/root.XXXXXX")
    log "debootstrap --variant=minbase bookworm (once; cached in $tarball)"
    debootstrap --variant=minbase bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 \
      || { tail -20 "$cache/debootstrap.log" >&2; rm -rf "$root"; exit 1; }
    # What debian's -slim images do: keep docs, man pages and locales out,
    # now and for every later apt install; no apt caches in the image.
    cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
    cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
EOF
    find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
    rm -rf "$root"/usr/share/{man,groff,info,lintian,linda}/* "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* \
           "$root"/var/log/* "$root"/tmp/*
    find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
    tar -C "$root" --numeric-owner -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
    rm -rf "$root"
  fi
  $docker import --change 'CMD ["bash"]' --change "LABEL $label" -m "stand-in: debootstrap minbase bookworm" "$tarball" "$1" >/dev/null
}

# A stand-in built FROM the base with a Dockerfile given on stdin.
build_from_base() { # $1: name; stdin: Dockerfile
  local context
  context=$(mktemp -d)
  cat >"$context/Dockerfile"
  [ -z "${2:-}" ] || cp "$2" "$context/"
  local out status=0
  out=$(DOCKER_BUILDKIT=0 $docker build -q --label "$label" -t "$1" "$context" 2>&1) || status=$?
  rm -rf "$context"
  [ $status = 0 ] || { echo "$out" >&2; echo "stand-ins: building $1 failed" >&2; exit 1; }
}

make_swift() { # $1: swift:<version>-bookworm
  local toolchain=${LARDER_SWIFT_TOOLCHAIN:-/opt/swift} packages=${LARDER_SWIFT_PACKAGES:-/opt/swift-packages}
  local want have_version
  want=$(echo "$1" | sed -E 's/^swift:([0-9.]+).*/\1/')
  have_version=$("$toolchain/usr/bin/swift" --version 2>&1 | grep -oE 'Swift version [0-9.]+' | grep -oE '[0-9.]+$')
  case $have_version in
    "$want"|"$want".*) ;;
    *) echo "stand-ins: $1 wants Swift $want, but $toolchain has $have_version" >&2; exit 1 ;;
  esac
  # What the official image installs for a build (its Dockerfile, less the
  # debugger's python and gnupg, which only verify the downloaded toolchain).
  build_from_base larder-stand-in/swift-deps <<EOF
FROM $base_image
RUN export DEBIAN_FRONTEND=noninteractive && apt-get -q update \\
 && apt-get -q install -y --no-install-recommends binutils ca-certificates git libc6-dev libcurl4-openssl-dev \\
      libedit2 libgcc-12-dev libsqlite3-0 libstdc++-12-dev libxml2-dev libncurses-dev libz3-dev pkg-config tzdata \\
      zlib1g-dev unzip \\
 && rm -rf /var/lib/apt/lists/*
EOF
  # The toolchain and the mirrors are copied in from bind mounts (not sent
  # as a build context): one copy of about 1.5 GB instead of three.
  local box=larder-stand-in-swift-$$
  # The git setting of this machine, for the mirrors' folder.
  local insteadof
  insteadof=$(git config --system --get-regexp '^url\..*\.insteadof$' || git config --global --get-regexp '^url\..*\.insteadof$' || true)
  $docker rm -f "$box" >/dev/null 2>&1 || true
  $docker run --name "$box" -v "$toolchain:/toolchain:ro" -v "$packages:/mirrors:ro" -e "INSTEADOF=$insteadof" \
    -e "PACKAGES=$packages" larder-stand-in/swift-deps bash -euc '
      tar -C /toolchain -c \
        --exclude="usr/bin/lldb*" --exclude="usr/lib/liblldb*" --exclude="usr/bin/sourcekit-lsp" \
        --exclude="usr/lib/libsourcekitdInProc.so" --exclude="usr/bin/clangd" --exclude="usr/bin/docc" \
        --exclude="usr/share/docc" --exclude="usr/bin/swift-format" --exclude="usr/bin/wasmkit" \
        --exclude="usr/lib/swift/embedded" --exclude="usr/bin/swift-build-sdk-interfaces" usr | tar -C / -x
      mkdir -p "$(dirname "$PACKAGES")" && cp -a /mirrors "$PACKAGES"
      echo "$INSTEADOF" | while read -r key value; do
        [ -n "$key" ] && git config --system --add "$key" "$value"
      done
      swift --version' | sed 's/^/stand-ins: swift image: /'
  $docker commit --change 'CMD ["/bin/bash"]' --change "LABEL $label" "$box" "$1" >/dev/null
  $docker rm "$box" >/dev/null
}

make_postgres() { # $1: postgres:<major>-bookworm
  local major
  major=$(echo "$1" | sed -E 's/^postgres:([0-9]+).*/\1/')
  build_from_base "$1" docker/stand-ins/postgres-entrypoint.sh <<EOF
FROM $base_image
RUN export DEBIAN_FRONTEND=noninteractive && apt-get -q update \\
 && apt-get -q install -y --no-install-recommends postgresql-$major \\
 && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \\
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/usr/lib/postgresql/$major/bin:\$PATH PGDATA=/var/lib/postgresql/data
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["sh", "/usr/local/bin/docker-entrypoint.sh"]
CMD ["postgres"]
EOF
}

make_curl() { # $1: curlimages/curl:<tag>
  build_from_base "$1" <<EOF
FROM $base_image
RUN export DEBIAN_FRONTEND=noninteractive && apt-get -q update \\
 && apt-get -q install -y --no-install-recommends curl ca-certificates \\
 && rm -rf /var/lib/apt/lists/* \\
 && useradd --uid 100 --user-group --no-create-home --home-dir /home/curl_user curl_user
USER curl_user
ENTRYPOINT ["curl"]
CMD ["--help"]
EOF
}

list=0 rebuild=0
for arg in "$@"; do
  case $arg in
    --list) list=1 ;;
    --rebuild) rebuild=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//' | grep -v '^set -euo'; exit 0 ;;
    *) echo "unknown option $arg" >&2; exit 2 ;;
  esac
done
mapfile -t wanted < <(images)
if [ $list = 1 ]; then printf '%s\n' "${wanted[@]}"; exit 0; fi
if [ $rebuild = 1 ]; then
  ids=$($docker image ls -q --filter "label=$label" | sort -u)
  [ -z "$ids" ] || $docker image rm -f $ids >/dev/null
fi

provide() { # $1: image name
  if have "$1"; then [ "$1" = "$base_image" ] && [ "${FUNCNAME[1]}" = provide ] || log "$1: there already"; return; fi
  if $docker pull -q "$1" >/dev/null 2>&1; then log "$1: pulled"; return; fi
  local start=$SECONDS
  case $1 in
    debian:bookworm-slim) make_debian "$1" ;;
    swift:*-bookworm) provide "$base_image"; make_swift "$1" ;;
    postgres:*-bookworm) provide "$base_image"; make_postgres "$1" ;;
    curlimages/curl:*) provide "$base_image"; make_curl "$1" ;;
    *) echo "stand-ins: no recipe for $1 (the registry is out of reach)" >&2; exit 1 ;;
  esac
  log "$1: made in $((SECONDS - start)) s"
}
for image in "${wanted[@]}"; do provide "$image"; done
