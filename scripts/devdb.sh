#!/usr/bin/env bash
# devdb.sh: install what Meridian needs and run a throwaway PostgreSQL + PostGIS cluster.
#
#   scripts/devdb.sh deps            install missing Debian packages (root + apt) or print the command
#   scripts/devdb.sh start NAME      start cluster .data/NAME (creating it); print its superuser URL
#   scripts/devdb.sh stop [NAME]     stop one cluster, or every cluster under .data/
#   scripts/devdb.sh url NAME        print the URL of a running cluster
#
# initdb refuses to run as root, so as root the cluster runs as the postgres OS user. The socket
# lives in the cluster's own directory and the server listens on 127.0.0.1 only, on a free port
# that is remembered so the URL stays stable between runs.
set -euo pipefail

top="$(cd "$(dirname "$0")/.." && pwd)"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
PACKAGES=(postgresql-15-postgis-3 gdal-bin)

log() { printf 'devdb: %s\n' "$*" >&2; }

deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ -x "$PGBIN/initdb" ] || missing+=(postgresql-15)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    log "installing ${missing[*]}"
    # Install before any cluster starts: upgrading postgresql-15 under a running server breaks it.
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    log "missing packages: ${missing[*]}"
    log "install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}"
    exit 1
  fi
}

# as_pg runs a command as the cluster owner.
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# clusterdir picks a directory the postgres user can reach: .data/ in the work tree when its
# parents are traversable, otherwise a stable directory under /tmp named after the work tree.
clusterdir() {
  local name="$1" dir="$top/.data/$name"
  mkdir -p "$top/.data"
  if [ -L "$dir" ]; then readlink "$dir"; return; fi
  if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$top/.data"; then
    local alt="/tmp/meridian-$(printf '%s' "$top" | sha1sum | cut -c1-10)-$name"
    mkdir -p "$alt"; ln -sfn "$alt" "$dir"; echo "$alt"; return
  fi
  mkdir -p "$dir"; echo "$dir"
}

freeport() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

pgstart() {
  local dir="$1" port="$2"
  local opts="-k $dir -p $port -c listen_addresses=127.0.0.1 -c max_connections=200"
  if [ "${DEVDB_FAST:-0}" = 1 ]; then
    # Test clusters trade durability for speed; they are rebuilt from migrations anyway.
    opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  fi
  as_pg "$PGBIN/pg_ctl" -D "$dir/pgdata" -l "$dir/server.log" -w -t 60 -o "$opts" start >/dev/null
}

url_of() { local d="$1"; echo "postgres://postgres@127.0.0.1:$(cat "$d/port")/meridian?sslmode=disable"; }

start() {
  local name="$1" dir; dir="$(clusterdir "$name")"
  local pgdata="$dir/pgdata"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir"
  if [ ! -s "$pgdata/PG_VERSION" ]; then
    log "initdb $pgdata"
    as_pg "$PGBIN/initdb" -D "$pgdata" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
  fi
  [ -s "$dir/port" ] || freeport > "$dir/port"
  local port; port="$(cat "$dir/port")"
  if ! as_pg "$PGBIN/pg_ctl" -D "$pgdata" status >/dev/null 2>&1; then
    if ! pgstart "$dir" "$port"; then
      # The remembered port was taken meanwhile: choose another once.
      freeport > "$dir/port"; port="$(cat "$dir/port")"
      pgstart "$dir" "$port" || { tail -20 "$dir/server.log" >&2; exit 1; }
    fi
  fi
  local psql=("$PGBIN/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1)
  if [ "$("${psql[@]}" -d postgres -tAc "select 1 from pg_database where datname='meridian'")" != 1 ]; then
    "${psql[@]}" -d postgres -c "create database meridian"
  fi
  "${psql[@]}" -d meridian -c "set client_min_messages=warning; create extension if not exists postgis" >/dev/null
  url_of "$dir"
}

stop() {
  local names=("$@")
  if [ ${#names[@]} -eq 0 ]; then
    for d in "$top"/.data/*/; do [ -e "$d/pgdata" ] && names+=("$(basename "$d")"); done
  fi
  for n in "${names[@]}"; do
    local d="$top/.data/$n"; [ -L "$d" ] && d="$(readlink "$d")"
    [ -d "$d/pgdata" ] || continue
    as_pg "$PGBIN/pg_ctl" -D "$d/pgdata" -m fast -w stop >/dev/null 2>&1 && log "stopped $n" || true
  done
}

cmd="${1:-}"; shift || true
case "$cmd" in
  deps) deps ;;
  start) deps; start "${1:?cluster name}" ;;
  stop) stop "$@" ;;
  url) d="$(clusterdir "${1:?cluster name}")"; url_of "$d" ;;
  *) echo "usage: $0 deps|start NAME|stop [NAME]|url NAME" >&2; exit 2 ;;
esac
