#!/usr/bin/env bash
# Makes this machine ready to build and run the service: installs Postgres and Redis from
# Debian's packages when they are missing, starts them on 127.0.0.1 when they are not running,
# and makes sure the `postgres` role can connect over TCP. Safe to run any number of times.
set -euo pipefail

PG_URL_ADMIN="postgres://postgres:postgres@127.0.0.1:5432/postgres"
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
as_postgres() { if [ "$(id -u)" -eq 0 ]; then su postgres -c "$*"; else sudo -u postgres sh -c "$*"; fi; }

missing=()
command -v pg_ctlcluster >/dev/null 2>&1 || missing+=(postgresql)
command -v psql >/dev/null 2>&1 || missing+=(postgresql-client)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
command -v cc >/dev/null 2>&1 || missing+=(build-essential)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "setup: starting PostgreSQL $version"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start
  for _ in $(seq 1 50); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 0.2; done
fi
# A fresh Debian cluster asks TCP clients for a password (scram); give the postgres role the
# one in our default URLs. Where auth is trust (CI images) the password is simply ignored.
if ! psql "$PG_URL_ADMIN" -qtAc 'SELECT 1' >/dev/null 2>&1; then
  echo "setup: setting the postgres role's password for local TCP connections"
  as_postgres "psql -qc \"ALTER USER postgres PASSWORD 'postgres'\""
fi
psql "$PG_URL_ADMIN" -qtAc 'SELECT 1' >/dev/null

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "setup: starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --logfile /tmp/funding-market-redis.log
  for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.2; done
fi
redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null
echo "setup: postgres and redis are up on 127.0.0.1"
