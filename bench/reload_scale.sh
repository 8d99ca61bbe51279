#!/usr/bin/env bash
# Reload at scale: Turnpike with a routes file of ROUTES routes (default 50,000: exact and
# prefix paths, a fifth with hosts, four upstreams) serves wrk on one route, first for a
# baseline run without reloads, then for a run of the same length during which the file is
# rewritten REWRITES times (each a complete, valid file with changed content; no SIGHUP: the
# daemon's file watch picks each one up). Prints each reload's duration and breakdown from
# the daemon's log, and wrk's latency percentiles and errors for both runs.
#
# Usage: bench/reload_scale.sh
# Env:   ROUTES=50000 REWRITES=5 DURATION=20s WORKERS=2 CONNECTIONS=50
#        BUILD_DIR=build/release KEEP=1 (keep the work dir: configs, logs, wrk output)
#        BURN=<seconds>: control experiment. Instead of rewriting the file, run a busy loop
#        (another process, same priority) for that long at each rewrite time; if p99 rises as
#        much as with reloads, the reloads cost latency through CPU time, not through stalls.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"
turnpike_ensure_packages wrk curl

routes=${ROUTES:-50000}
rewrites=${REWRITES:-5}
duration=${DURATION:-20s}
workers=${WORKERS:-2}
connections=${CONNECTIONS:-50}
build=${BUILD_DIR:-$root/build/release}
turnpike_bin=$build/src/daemon/turnpike
backend_bin=$build/tests/turnpike_test_backend
for bin in "$turnpike_bin" "$backend_bin"; do
  [[ -x $bin ]] || { echo "reload_scale: build first: $bin missing" >&2; exit 1; }
done
seconds=${duration%s}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "reload_scale: DURATION must be whole seconds (20s)" >&2; exit 1; }

work=$(mktemp -d /tmp/turnpike-reload-scale.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ -n ${KEEP:-} ]]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

start_backend() {  # start_backend NAME ID -> sets port_NAME
  "$backend_bin" --listen 127.0.0.1:0 --id "$2" >"$work/$1.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q LISTENING "$work/$1.out" && break; sleep 0.05; done
  printf -v "port_$1" '%s' "$(awk '/LISTENING/ {print $2}' "$work/$1.out")"
}
start_backend a a
start_backend b b

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
nginx_config: {worker_processes: $workers, error_log_level: info}
YAML

# gen_routes VERSION FILE: ROUTES routes; a third are prefix routes, a fifth have hosts; each
# version moves every route to another of the four upstreams and adds /echo/v<VERSION>. The
# measured route /hello always goes to backend a.
gen_routes() {
  awk -v n="$routes" -v v="$1" -v pa="$port_a" -v pb="$port_b" 'BEGIN {
    print "routes:"
    for (i = 0; i < n; i++) {
      if (i % 3 == 0) uri = "/p" i "/*"; else uri = "/api/v1/svc" i "/items"
      print "  - id: r" i
      print "    uri: " uri
      if (i % 5 == 0) print "    hosts: [h" (i % 100) ".example.com]"
      print "    upstream_id: u" ((i + v) % 4)
    }
    print "  - {id: hello, uri: /hello, upstream_id: hello}"
    print "  - {id: v" v ", uri: /echo/v" v ", upstream_id: hello}"
    print "upstreams:"
    print "  - {id: hello, nodes: {\"127.0.0.1:" pa "\": 1}}"
    for (u = 0; u < 4; u++) print "  - {id: u" u ", nodes: {\"127.0.0.1:" (u % 2 ? pb : pa) "\": 1}}"
    print "#END"
  }' >"$2"
}
for ((v = 0; v <= rewrites; v++)); do gen_routes "$v" "$work/routes.$v.yaml"; done
cp "$work/routes.0.yaml" "$work/apisix.yaml"
echo "reload at scale: $routes routes ($(du -h "$work/apisix.yaml" | cut -f1) file), $workers workers, wrk -t1 -c$connections -d$duration, $rewrites rewrites"

"$turnpike_bin" -c "$work/config.yaml" >"$work/turnpike.log" 2>&1 &
tp=$!
pids+=("$tp")
for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/hello" >/dev/null && break; sleep 0.05; done
curl -sf "http://127.0.0.1:$port/hello" >/dev/null || { echo "turnpike did not come up" >&2; cat "$work/turnpike.log" >&2; exit 1; }

# wrk's done() hook prints the tail percentiles --latency does not show.
cat >"$work/report.lua" <<'LUA'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("TAIL p50=%.2f p99=%.2f p99.9=%.2f max=%.2f requests=%d errors=%d non2xx=%d\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000, summary.requests,
    e.connect + e.read + e.write + e.timeout, e.status))
end
LUA
run_wrk() {  # run_wrk OUT
  wrk -t1 -c"$connections" -d"$duration" --latency -s "$work/report.lua" \
    "http://127.0.0.1:$port/hello" >"$1" 2>&1
}

wrk -t1 -c"$connections" -d2s "http://127.0.0.1:$port/hello" >/dev/null 2>&1  # warm-up
run_wrk "$work/wrk.baseline"

loaded() { grep -c 'config version .* loaded' "$work/turnpike.log" || true; }
before=$(loaded)
run_wrk "$work/wrk.reload" &
wrk_pid=$!
# Spread the rewrites over the run, leaving the last quarter quiet.
burns=()
gap=$(awk -v s="$seconds" -v r="$rewrites" 'BEGIN { printf "%.2f", s * 0.75 / (r + 1) }')
for ((v = 1; v <= rewrites; v++)); do
  sleep "$gap"
  if [[ -n ${BURN:-} ]]; then
    timeout "$BURN" sh -c 'while :; do :; done' &
    burns+=($!)
    continue
  fi
  cp "$work/routes.$v.yaml" "$work/apisix.yaml.tmp"
  mv "$work/apisix.yaml.tmp" "$work/apisix.yaml"  # atomic, as config management tools do
done
wait "$wrk_pid"
for pid in "${burns[@]}"; do wait "$pid" || true; done

tail_of() { grep TAIL "$1" | sed 's/^TAIL //'; }
echo "baseline (no reloads): $(tail_of "$work/wrk.baseline") ms"
if [[ -n ${BURN:-} ]]; then
  echo "with $rewrites busy loops of $BURN s: $(tail_of "$work/wrk.reload") ms"
else
  echo "with $rewrites reloads:  $(tail_of "$work/wrk.reload") ms"
fi
grep -E "Socket errors|Non-2xx" "$work/wrk.baseline" "$work/wrk.reload" | sed 's/^/  /' || true
if [[ -z ${BURN:-} ]]; then
  # The last version is live once /echo/v<REWRITES> answers (a reload may still be running).
  for _ in $(seq 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/echo/v$rewrites")
    [[ $code == 200 ]] && break
    sleep 0.1
  done
  echo "reloads: $(( $(loaded) - before )) logged for $rewrites rewrites; /echo/v$rewrites answers $code"
fi
grep -E 'config version [0-9]+ (loaded|released)' "$work/turnpike.log" |
  sed -E 's/^.*(config version)/  \1/; s/ \([0-9]+ node sets unchanged\)//'
grep -E '\[(error|critical)\]' "$work/turnpike.log" | head -5 | sed 's/^/  /' || true
