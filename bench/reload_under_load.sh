#!/usr/bin/env bash
# Reload under load: wrk drives Turnpike while the routes file is rewritten (and SIGHUP sent)
# REWRITES times; every version is valid and alternates the route between two upstreams.
# Prints wrk's summary (any non-2xx or socket error is a failed request) and the number of
# reloads Turnpike logged.
#
# Usage: bench/reload_under_load.sh      Env: REWRITES=20 DURATION=10s WORKERS=2 ROUTES=10
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"
turnpike_ensure_packages wrk curl

rewrites=${REWRITES:-20}
duration=${DURATION:-10s}
workers=${WORKERS:-2}
routes=${ROUTES:-10}
build=${BUILD_DIR:-$root/build/release}
turnpike_bin=$build/src/daemon/turnpike
backend_bin=$build/tests/turnpike_test_backend
for bin in "$turnpike_bin" "$backend_bin"; do
  [[ -x $bin ]] || { echo "reload: build first: $bin missing" >&2; exit 1; }
done

work=$(mktemp -d /tmp/turnpike-reload.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$backend_bin" --listen 127.0.0.1:0 --id a >"$work/a.out" 2>&1 &
pids+=($!)
"$backend_bin" --listen 127.0.0.1:0 --id b >"$work/b.out" 2>&1 &
pids+=($!)
for f in a b; do
  for _ in $(seq 100); do grep -q LISTENING "$work/$f.out" && break; sleep 0.05; done
done
port_a=$(awk '/LISTENING/ {print $2}' "$work/a.out")
port_b=$(awk '/LISTENING/ {print $2}' "$work/b.out")

# A free port for Turnpike: let the kernel pick one, via a throwaway backend.
"$backend_bin" --listen 127.0.0.1:0 >"$work/p.out" 2>&1 &
probe=$!
for _ in $(seq 100); do grep -q LISTENING "$work/p.out" && break; sleep 0.05; done
port=$(awk '/LISTENING/ {print $2}' "$work/p.out")
kill "$probe"; wait "$probe" 2>/dev/null || true

cat >"$work/config.yaml" <<YAML
apisix:
  node_listen: [{ip: 127.0.0.1, port: $port}]
  enable_ipv6: false
deployment: {role: data_plane, role_data_plane: {config_provider: yaml}}
nginx_config: {worker_processes: $workers}
YAML

write_routes() {  # write_routes VERSION
  local v=$1 up=$(( $1 % 2 + 1 )) i
  {
    echo "routes:"
    for ((i = 0; i < routes; i++)); do
      echo "  - {id: r$i, uri: /r$i/*, upstream_id: $up}"
    done
    echo "  - {id: hello, uri: /hello, upstream_id: $up}"
    echo "upstreams:"
    echo "  - {id: 1, nodes: {\"127.0.0.1:$port_a\": 1}}"
    echo "  - {id: 2, nodes: {\"127.0.0.1:$port_b\": 1}}"
    echo "# version $v"
    echo "#END"
  } >"$work/apisix.yaml.tmp"
  mv "$work/apisix.yaml.tmp" "$work/apisix.yaml"
}
write_routes 0

"$turnpike_bin" -c "$work/config.yaml" >"$work/turnpike.log" 2>&1 &
tp=$!
pids+=("$tp")
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/hello" >/dev/null && break; sleep 0.05; done

wrk -t1 -c50 -d"$duration" --latency "http://127.0.0.1:$port/hello" >"$work/wrk.out" 2>&1 &
wrk_pid=$!
sleep 1
for ((v = 1; v <= rewrites; v++)); do
  write_routes "$v"
  kill -HUP "$tp"
  sleep 0.3
done
wait "$wrk_pid"

echo "reload under load: $rewrites rewrites + SIGHUP, $workers workers, wrk -t1 -c50 -d$duration"
grep -E "Latency|requests in|Requests/sec|Non-2xx|Socket errors|99%" "$work/wrk.out"
grep -q -E "Non-2xx|Socket errors" "$work/wrk.out" || echo "  failed requests: 0"
echo "  reloads logged: $(grep -c 'config version .* loaded' "$work/turnpike.log")"
grep 'config version' "$work/turnpike.log" | tail -1 | sed 's/^/  last: /'
