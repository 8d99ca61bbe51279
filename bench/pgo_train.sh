#!/usr/bin/env bash
# The training run of a profile-guided build (scripts/build-pgo): drives a mixed load through
# an instrumented gateway (-DTURNPIKE_PGO=generate) so that, when it exits, every object of
# its build directory has a .gcda profile next to it.
#
#   wrk (bench/wrk/pgo_mix.lua) -> Turnpike (1 worker, instrumented) -> upstream nginx
#
# Routes: /hello (plain proxy), /chain (limit-count + proxy-rewrite + prometheus: the mission
# plugins, as bench/chain.yaml), /rw (response-rewrite + request-id + ip-restriction), and
# misses. Runs: the mix on 50 keep-alive connections, the same on 8 connections that close
# after each answer (accept and close paths), and a scrape of the prometheus exporter every
# second. Then SIGTERM: the gateway drains and exits, which writes the profiles.
#
# Usage: bench/pgo_train.sh      (TURNPIKE_BIN: the instrumented gateway; required)
# Env:   DURATION=6s   length of the keep-alive run (the closing run takes a third of it)
#        KEEP=0        1 = keep the work directory
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
turnpike_bin=${TURNPIKE_BIN:?pgo_train: TURNPIKE_BIN must name the instrumented gateway}
[[ -x $turnpike_bin ]] || { echo "pgo_train: no binary at $turnpike_bin" >&2; exit 1; }
for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null || { echo "pgo_train: $tool is not installed" >&2; exit 1; }
done
duration=${DURATION:-6s}
[[ $duration =~ ^([0-9]+)s?$ ]] || { echo "pgo_train: DURATION must be whole seconds" >&2; exit 2; }
seconds=${BASH_REMATCH[1]}
((seconds >= 3)) || { echo "pgo_train: DURATION must be at least 3s" >&2; exit 2; }
keep=${KEEP:-0}
load_cpus=()

bench_name=pgo_train
# shellcheck source=bench/lib/loadtest.sh
source "$root/bench/lib/loadtest.sh"

start_upstream_nginx
dir=$work/turnpike
mkdir -p "$dir"
cat >"$dir/apisix.yaml" <<EOF
upstreams:
  - id: 1
    type: roundrobin
    nodes:
      "127.0.0.1:$up_port": 1
routes:
  - id: hello
    uri: /hello
    upstream_id: 1
  - id: chain
    uri: /chain
    plugins:
$(sed 's/^/      /' "$root/bench/chain.yaml")
    upstream_id: 1
  - id: rw
    uri: /rw
    plugins:
      response-rewrite:
        headers:
          set:
            X-Served-By: turnpike
      request-id: {}
      ip-restriction:
        whitelist: [127.0.0.0/8]
    upstream_id: 1
#END
EOF
free_port
export_port=$REPLY
start_turnpike_process "$dir" "plugin_attr:
  prometheus:
    export_addr: {ip: 127.0.0.1, port: $export_port}"

url=http://127.0.0.1:$TURNPIKE_PORT
scrapes=0
runs=0
# wrk_run ARGS...: one wrk run with the mix, its scrapes beside it; fails on socket errors.
wrk_run() {
  runs=$((runs + 1))
  local out=$work/wrk.$runs.txt
  wrk -t1 --latency -s "$root/bench/wrk/pgo_mix.lua" "$@" "$url/" >"$out" 2>&1 &
  wrk_pid=$!
  while kill -0 "$wrk_pid" 2>/dev/null; do
    curl -fsS --max-time 2 "http://127.0.0.1:$export_port/apisix/prometheus/metrics" \
      >/dev/null && scrapes=$((scrapes + 1))
    sleep 1
  done
  wait "$wrk_pid" || { echo "pgo_train: wrk failed:" >&2; cat "$out" >&2; exit 1; }
  wrk_pid=
  if grep -q 'Socket errors' "$out"; then
    echo "pgo_train: the gateway dropped requests:" >&2
    cat "$out" >&2
    exit 1
  fi
  awk '/ requests in / {printf "pgo_train: %s requests", $1} /Non-2xx/ {printf ", %s not 2xx (the misses)", $NF}
       END {print ""}' "$out" >&2
}
wrk_run -c50 -d"${seconds}s"
wrk_run -c8 -d"$(((seconds + 2) / 3))s" -H "Connection: close"
((scrapes > 0)) || { echo "pgo_train: the exporter never answered" >&2; exit 1; }

# The profiles are written when the gateway exits normally.
stop_pid "$TURNPIKE_PID"
echo "pgo_train: done ($scrapes scrapes); the gateway exited, its profiles are written" >&2
