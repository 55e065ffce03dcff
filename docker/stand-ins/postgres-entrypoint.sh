#!/bin/sh
# The postgres stand-in's entrypoint (docker/stand-ins.sh): what the official
# image's docker-entrypoint.sh does for Larder's compose file. On the first
# start (an empty $PGDATA) it creates the cluster with the superuser
# $POSTGRES_USER (default postgres) and the password $POSTGRES_PASSWORD
# (required, as in the official image), and the database $POSTGRES_DB
# (default: the user's name); then it runs the server as the `postgres`
# user, listening on every address, with password (scram-sha-256) auth for
# connections over the network and trust on the local socket.
set -eu
: "${PGDATA:=/var/lib/postgresql/data}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}

if [ "${1:-postgres}" != postgres ]; then exec "$@"; fi
shift || true

as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 0700 "$PGDATA"
else
  as_postgres() { "$@"; }
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "Error: Database is uninitialized and superuser password is not specified." >&2
    echo "       Set POSTGRES_PASSWORD (the official image's rule)." >&2
    exit 1
  fi
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  chown postgres "$pwfile" 2>/dev/null || true
  as_postgres initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 -D "$PGDATA" > /dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\";" | as_postgres postgres --single -D "$PGDATA" postgres > /dev/null
  fi
  echo "postgres stand-in: initialized $PGDATA (user $user, database $db)"
fi

if [ "$(id -u)" = 0 ]; then
  exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
