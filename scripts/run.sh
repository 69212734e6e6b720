#!/usr/bin/env bash
# run.sh: serve Meridian locally for development (called by `make run`).
# Uses DATABASE_URL when set, otherwise a throwaway PostGIS cluster under .data/pg. A development
# JWT secret and the first admin's password are generated once and kept in .data/.
set -euo pipefail
top="$(cd "$(dirname "$0")/.." && pwd)"
cd "$top"
mkdir -p .data
url="${DATABASE_URL:-$(scripts/devdb.sh start pg)}"

random() { head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c "$1"; }
[ -s .data/jwt_secret ] || { random 48 > .data/jwt_secret; chmod 600 .data/jwt_secret; }
# Four character classes so the password satisfies the policy of spec section 4.1.
[ -s .data/admin_password ] || { printf 'Mer-%s-7a' "$(random 16)" > .data/admin_password; chmod 600 .data/admin_password; }

export DATABASE_URL="$url"
export JWT_SECRET_KEY="${JWT_SECRET_KEY:-$(cat .data/jwt_secret)}"
export ADMIN_USERNAME="${ADMIN_USERNAME:-admin}"
export ADMIN_PASSWORD="${ADMIN_PASSWORD:-$(cat .data/admin_password)}"
export ADMIN_EMAIL="${ADMIN_EMAIL:-admin@localhost.localdomain}"
export DATA_DIR="${DATA_DIR:-$top/.data/files}"
export LISTEN_ADDR="${LISTEN_ADDR:-127.0.0.1:8080}"
export BASE_URL="${BASE_URL:-http://127.0.0.1:8080}"
export LOG_FORMAT="${LOG_FORMAT:-text}"

cat <<MSG
Meridian is starting at $BASE_URL/api  (docs: $BASE_URL/api/docs, health: $BASE_URL/api/health)
Sign in as the first admin:
  username: $ADMIN_USERNAME
  password: $ADMIN_PASSWORD
  e.g. curl -s -d "username=$ADMIN_USERNAME&password=<password>" $BASE_URL/api/auth/login
Stop with Ctrl-C; \`make stop\` stops the database too.
MSG
exec bin/meridian serve
