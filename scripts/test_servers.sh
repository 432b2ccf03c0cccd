#!/usr/bin/env bash
# Throw-away PostgreSQL and Redis servers for the test suite, on free 127.0.0.1 ports in a
# temporary directory. `start` prints the `export` lines the tests read
# (TEST_POSTGRES_URL, TEST_REDIS_URL, TEST_SERVERS_DIR);
# `stop DIR` stops both and removes DIR. PostgreSQL refuses to run as root: as root it runs
# as the `postgres` user. Durability is off (fsync): the data is thrown away anyway.
set -euo pipefail

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

as_postgres() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_bin() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    [ -n "$dir" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
    echo "$dir"
}

case "${1:-}" in
start)
    dir=$(mktemp -d /tmp/agentsvc-test-servers.XXXXXX)
    chmod 755 "$dir"
    bin=$(pg_bin)
    pg_port=$(free_port)
    mkdir "$dir/pg"
    [ "$(id -u)" -ne 0 ] || chown postgres "$dir/pg"
    as_postgres "$bin/initdb" -D "$dir/pg/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 \
        >"$dir/pg/initdb.log" 2>&1
    # One line: pg_ctl runs the options through a shell, where a newline ends the command.
    pg_options="-p $pg_port -k $dir/pg -c listen_addresses=127.0.0.1 -c max_connections=1000"
    pg_options+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    as_postgres "$bin/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/server.log" -w -t 60 start \
        -o "$pg_options" >/dev/null
    redis_port=$(free_port)
    # A database per test process (tests/support/pg.py): 1 + the pytest-xdist worker's number.
    redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --databases 64 \
        --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --dir "$dir"
    for _ in $(seq 50); do
        redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
    echo "export TEST_SERVERS_DIR=$dir"
    echo "export TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:$pg_port/postgres"
    echo "export TEST_REDIS_URL=redis://127.0.0.1:$redis_port/0"
    ;;
stop)
    dir=${2:?usage: test_servers.sh stop DIR}
    as_postgres "$(pg_bin)/pg_ctl" -D "$dir/pg/data" -m immediate stop >/dev/null 2>&1 || true
    [ -f "$dir/redis.pid" ] && kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
    rm -rf "$dir"
    ;;
*)
    echo "usage: test_servers.sh start | stop DIR" >&2
    exit 2
    ;;
esac
