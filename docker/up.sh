#!/usr/bin/env bash
# `compose up --build` for the README, with whichever Compose is installed
# (v2's `docker compose`, else v1's `docker-compose`), after the checks that
# otherwise fail only once the build is done:
#  - the host ports the services publish are free (8080, or
#    LARDER_HOST_PORT; 8081 and 8082 with `--profile postgres`);
#  - the base images are here or can be pulled; where no registry answers,
#    it says how to make local stand-ins (docker/stand-ins.sh).
#
#   bash docker/up.sh                      # larder and the example client
#   bash docker/up.sh -d larder            # arguments go to `up`
#   bash docker/up.sh --profile postgres   # two Larders on one PostgreSQL
#   bash docker/up.sh --print              # the checks, then the command it would run
set -euo pipefail
cd "$(dirname "$0")/.."

if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
  compose=(docker-compose)
else
  echo "up: no Compose: install the Compose plugin (docker compose) or docker-compose" >&2
  exit 1
fi

docker info >/dev/null 2>&1 || { echo "up: no Docker engine answers (docker info fails): start dockerd" >&2; exit 1; }

print=false profiles=() up_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --print) print=true ;;
    --profile) profiles+=(--profile "$2"); shift ;;
    *) up_args+=("$1") ;;
  esac
  shift
done

# A port taken (a `swift run larder` still on 8080, say) is found now, not
# after minutes of building.
ports=("${LARDER_HOST_PORT:-8080}")
case " ${profiles[*]-} " in *" postgres "*) ports+=(8081 8082) ;; esac
for port in "${ports[@]}"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "up: 127.0.0.1:$port is taken: stop what listens there, or publish larder elsewhere with LARDER_HOST_PORT=PORT" >&2
    exit 1
  fi
done

# The images the Dockerfile and the compose file name: here, or pulled now.
missing=()
for image in $(bash docker/stand-ins.sh --list); do
  docker image inspect "$image" >/dev/null 2>&1 && continue
  timeout 120 docker pull -q "$image" >/dev/null 2>&1 || missing+=("$image")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "up: no registry gave ${missing[*]}: as root, \`bash docker/stand-ins.sh\` makes local stand-ins from Debian's packages (docs/docker.md)" >&2
  exit 1
fi

command=("${compose[@]}" ${profiles[@]+"${profiles[@]}"} up --build ${up_args[@]+"${up_args[@]}"})
if $print; then echo "${command[*]}"; exit 0; fi
exec "${command[@]}"
