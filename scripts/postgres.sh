# Sourced by ./scripts/test (and ./scripts/nodes): a throwaway PostgreSQL cluster for the
# storage tests, made with `initdb` on a temporary directory and started with `pg_ctl` on
# a free loopback port; stopped and removed when the sourcing script exits. The server
# comes from the machine's PostgreSQL packages, installed here (Debian's postgresql-15)
# where they are missing; the script stops with a message if that fails (the tests would
# fail without it, never skip). Exports EVO_TEST_POSTGRES, the cluster's URL, and
# EVO_TEST_PG_BIN and EVO_TEST_PG_USER (the server's programs, and the user they run as
# when this runs as root) for a test that starts and stops a cluster of its own.

PG_MAJOR=15
pg_bin=""
for dir in "$(dirname "$(command -v initdb 2>/dev/null || echo /none/initdb)")" /usr/lib/postgresql/*/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
        pg_bin=$dir
        break
    fi
done
if [ -z "$pg_bin" ]; then
    source "$(dirname "${BASH_SOURCE[0]}")/debian.sh"
    debian_install "the storage tests need PostgreSQL's initdb and pg_ctl" "postgresql-$PG_MAJOR"
    pg_bin=/usr/lib/postgresql/$PG_MAJOR/bin
fi

# The server refuses to run as root: as root, the cluster belongs to `postgres`.
pg_as=()
if [ "$(id -u)" = 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
        useradd --system --no-create-home postgres
    fi
    pg_as=(runuser -u postgres --)
fi
pg_dir=$(mktemp -d /tmp/evo-pg.XXXXXX)
chmod 755 "$pg_dir"
[ "${#pg_as[@]}" = 0 ] || chown postgres "$pg_dir"
pg_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

stop_postgres() {
    "${pg_as[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$pg_dir"
}
trap stop_postgres EXIT

# fsync off: the cluster lives for one test run, and a crash loses nothing of value.
if ! "${pg_as[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -A trust -U evo -E UTF8 --locale=C.UTF-8 --no-sync >"$pg_dir/initdb.log" 2>&1 ||
    ! "${pg_as[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 60 \
        -o "-p $pg_port -k $pg_dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" start >/dev/null; then
    echo "error: could not start a PostgreSQL cluster in $pg_dir:" >&2
    cat "$pg_dir/initdb.log" "$pg_dir/server.log" >&2 2>/dev/null || true
    exit 1
fi
EVO_TEST_POSTGRES="postgres://evo@127.0.0.1:$pg_port/postgres"
EVO_TEST_PG_BIN=$pg_bin
EVO_TEST_PG_USER=$([ "${#pg_as[@]}" = 0 ] || echo postgres)
export EVO_TEST_POSTGRES EVO_TEST_PG_BIN EVO_TEST_PG_USER
