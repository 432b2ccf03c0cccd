#!/usr/bin/env bash
# Run schemathesis against a live agentsvc on a throw-away data directory (two processes,
# each on half of the operations).
# Usage: scripts/fuzz_api.sh [extra schemathesis options]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$work/fuzz.toml" <<TOML
[server]
data_dir = "$work/data"
port = $port
[plans]
default = "fuzz"
[plans.fuzz]                # unlimited, so the fuzzer is not rate limited
[outbound]
allow_private = false
[handoff]
max_stream_seconds = 0.5    # event streams end quickly instead of holding each request
TOML
export AGENTSVC_CONFIG="$work/fuzz.toml"
key=$(python -m agentsvc apikey create --email fuzz@example.com)
python -m agentsvc serve > "$work/server.log" 2>&1 &
server=$!
# .ci/run starts this at the lowest priority beside the tests: the server may take a while
# to come up and to build its schema, so both get minutes, and the schema is fetched once
# (both halves then read the file) instead of by each half with schemathesis's 10 s limit.
for _ in $(seq 1200); do
    curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    kill -0 "$server" 2>/dev/null || { echo "the server did not start:"; cat "$work/server.log"; exit 1; }
    sleep 0.1
done
curl -fsS --max-time 300 -o "$work/openapi.json" "http://127.0.0.1:$port/api/v1/openapi.json"
cd "$here"
# Two schemathesis processes, each on half of the operations (by the first segment of the
# path, a-f and the rest), against the one server: generating cases is most of the work,
# in one thread per process, so the halves take both cores when the machine has them.
fuzz() {  # include|exclude: one half
    schemathesis run "$work/openapi.json" --url "http://127.0.0.1:$port" \
        --"$1"-path-regex '^/api/v1/[a-f]' \
        --header "Authorization: Bearer $key" \
        --checks all \
        --max-examples "${FUZZ_MAX_EXAMPLES:-30}" \
        ${FUZZ_SEED:+--seed "$FUZZ_SEED"} \
        --request-timeout 30 \
        --suppress-health-check all \
        --warnings off \
        "${@:2}"
}
status=0
fuzz include "$@" > "$work/first-half.log" 2>&1 &
first=$!
fuzz exclude "$@" || status=$?
wait "$first" || status=$?
echo "== the other half of the operations (paths /api/v1/a... to /api/v1/f...)"
cat "$work/first-half.log"
# Our own unexpected errors are logged by the "agentsvc.*" loggers (aiohttp's parser logs
# the fuzzer's malformed requests under aiohttp.server; those are answered 400 correctly).
if grep -q "ERROR agentsvc" "$work/server.log"; then
    echo "server logged an unexpected error:"; grep -A20 "ERROR agentsvc" "$work/server.log" | head -80
    status=1
fi
exit $status
