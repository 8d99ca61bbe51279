#!/usr/bin/env bash
# Static vs discovered nodes (APISIX PR #12258's story): does an upstream whose nodes come from a
# registry polled every second cost more per request than the same nodes written in the config?
#
#   wrk -> Turnpike (1 worker) -> upstream of N nodes (N loopback ports of a few nginx processes)
#            |  static:     the N nodes in apisix.yaml
#            |  discovered: discovery_type nacos; the FAKE Nacos server (tests/support/
#            |              fake_nacos.py) answers the same N instances to every poll
#            |              (fetch_interval 1 s)
#
# In one run, for every size in SIZES and every round, a fresh gateway serves a wrk run per mode
# (the order alternates between rounds); its CPU time (worker and control thread: the polling
# counts; the control thread's share of a CPU is shown apart) is sampled around each run. At the end, per size: medians of req/s, p99 and CPU µs per
# request, the ratio discovered/static of the medians and the median of each round's ratio (its
# two runs are back to back, so it is the steadier figure on a busy machine); target >= 0.98x,
# APISIX before its fix: 0.48x at 100 nodes.
#
# Usage: bench/discovery_nodes.sh
# Env:   SIZES="1 100 10000"  node counts
#        ROUNDS=3             rounds (each runs both modes at every size)
#        DURATION=10s         each wrk run;  WARMUP=2s  unmeasured run first (visits every node)
#        CONNECTIONS=50       wrk connections;  THREADS=1  wrk threads
#        FETCH_INTERVAL=1     the provider's poll period (seconds)
#        TURNPIKE_BIN         gateway binary (default build/release/src/daemon/turnpike)
#        PIN=auto             auto|1|0: the gateway on CPU 0; wrk, nginx and the fake Nacos on the
#                             others (auto = with 2+ CPUs and taskset)
#        KEEP=0               1 = keep the work directory
# Nodes are distinct loopback ports (one listening socket each, no wildcard address), spread
# over nginx processes of PORTS_PER_NGINX=2500 ports each; upstream keep-alive keeps one
# connection per node warm, so no run reconnects.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"

read -r -a sizes <<<"${SIZES:-1 100 10000}"
rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
[[ $duration =~ ^[0-9]+$ ]] && duration=${duration}s
warmup=${WARMUP:-2s}
[[ $warmup =~ ^[0-9]+$ ]] && warmup=${warmup}s
connections=${CONNECTIONS:-50}
threads=${THREADS:-1}
fetch_interval=${FETCH_INTERVAL:-1}
turnpike_bin=${TURNPIKE_BIN:-$root/build/release/src/daemon/turnpike}
pin=${PIN:-auto}
keep=${KEEP:-0}
per_nginx=${PORTS_PER_NGINX:-2500}
fake_nacos=$root/tests/support/fake_nacos.py

[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "discovery_nodes: ROUNDS must be >= 1" >&2; exit 2; }
for s in "${sizes[@]}"; do
  [[ $s =~ ^[1-9][0-9]*$ ]] || { echo "discovery_nodes: bad size '$s'" >&2; exit 2; }
done
turnpike_ensure_packages "${TURNPIKE_BENCH_DEPS[@]}" curl python3
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [[ ! -x $turnpike_bin ]]; then
  echo "discovery_nodes: no Turnpike binary at $turnpike_bin (build/release: see bench/compare.sh)" >&2
  exit 1
fi

ncpu=$(nproc)
proxy_cpus=()
load_cpus=()
if [[ $pin == 1 || ($pin == auto && $ncpu -ge 2) ]] && command -v taskset >/dev/null 2>&1 &&
  ((ncpu >= 2)); then
  proxy_cpus=(taskset -c 0)
  load_cpus=(taskset -c "1-$((ncpu - 1))")
fi

bench_name=discovery_nodes
clk_tck=$(getconf CLK_TCK)
# shellcheck source=bench/lib/loadtest.sh
source "$root/bench/lib/loadtest.sh"

# Node ports: the largest size's worth of free loopback ports below the ephemeral range -----------
max_size=0
for s in "${sizes[@]}"; do ((s > max_size)) && max_size=$s; done
mapfile -t ports < <(python3 - "$max_size" <<'EOF'
import socket, sys
need, found = int(sys.argv[1]), []
for port in range(10000, 30000):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        found.append(port)
    except OSError:
        pass
    finally:
        s.close()
    if len(found) == need:
        break
print("\n".join(map(str, found)))
EOF
)
((${#ports[@]} == max_size)) || { echo "$bench_name: not enough free ports" >&2; exit 1; }

# Upstream nginx processes, each answering `hello world` on its share of the ports ---------------
start_hello_backends "$per_nginx" "${ports[@]/#/127.0.0.1:}"

# The fake Nacos with one service per size (svc-N: the first N ports) ----------------------------
mkdir -p "$work/nacos"
"${load_cpus[@]}" python3 "$fake_nacos" --port 0 >"$work/nacos/out" 2>"$work/nacos/err" &
started_pids+=("$!")
for ((i = 0; i < 100; i++)); do
  nacos_port=$(awk '/^LISTENING/ {print $2}' "$work/nacos/out")
  [[ -n $nacos_port ]] && break
  sleep 0.1
done
[[ -n ${nacos_port:-} ]] || { echo "$bench_name: fake nacos did not start" >&2; cat "$work/nacos/err" >&2; exit 1; }
for s in "${sizes[@]}"; do
  printf '%s\n' "${ports[@]:0:s}" | python3 -c '
import json, sys
print(json.dumps([{"ip": "127.0.0.1", "port": int(p), "weight": 1.0} for p in sys.stdin.read().split()]))' \
    >"$work/nacos/svc-$s.json"
  curl -fsS -X POST --data-binary "@$work/nacos/svc-$s.json" \
    "http://127.0.0.1:$nacos_port/fake/instances?serviceName=svc-$s" >/dev/null
done

# One gateway per run ----------------------------------------------------------------------------
# start_gateway MODE SIZE: a fresh Turnpike for MODE (static|discovered) and SIZE nodes.
start_gateway() {
  local mode=$1 size=$2 dir=$work/gw-$1-$2 extra=
  rm -rf "$dir"
  mkdir -p "$dir"
  {
    echo "routes:"
    echo "  - id: hello"
    echo "    uri: /hello"
    echo "    upstream:"
    echo "      type: roundrobin"
    if [[ $mode == static ]]; then
      echo "      nodes:"
      for ((i = 0; i < size; i++)); do echo "        \"127.0.0.1:${ports[i]}\": 1"; done
    else
      echo "      discovery_type: nacos"
      echo "      service_name: svc-$size"
    fi
    echo "#END"
  } >"$dir/apisix.yaml"
  if [[ $mode == discovered ]]; then
    extra=$'discovery:\n  nacos:\n    host: ["http://127.0.0.1:'"$nacos_port"$'"]\n    fetch_interval: '"$fetch_interval"
  fi
  start_turnpike_process "$dir" "$extra" "${proxy_cpus[@]}"
  # Keep-alive pool per node: the one connection each node gets stays open between visits.
  gw_pid=$TURNPIKE_PID
  gw_url=http://127.0.0.1:$TURNPIKE_PORT/hello
}

# ctl_ticks: CPU ticks of the gateway's main thread, the control thread (discovery runs there).
ctl_ticks() {
  local stat fields
  stat=$(<"/proc/$gw_pid/task/$gw_pid/stat")
  stat=${stat##*) }
  read -r -a fields <<<"$stat"
  echo $((fields[11] + fields[12]))
}

# run_wrk DURATION OUTFILE: sets RUN_* (parse_wrk), RUN_CPU_US (the gateway's CPU per request)
# and RUN_CTL_PCT (the control thread's share of one CPU during the run).
run_wrk() {
  local dur=$1 out=$2 before after ctl_before ctl_after start end
  before=$(cpu_ticks "$gw_pid")
  ctl_before=$(ctl_ticks)
  start=$(date +%s.%N)
  "${load_cpus[@]}" wrk -t"$threads" -c"$connections" -d"$dur" --latency "$gw_url" >"$out" 2>&1 &
  wrk_pid=$!
  wait "$wrk_pid" || true
  wrk_pid=
  after=$(cpu_ticks "$gw_pid")
  ctl_after=$(ctl_ticks)
  end=$(date +%s.%N)
  parse_wrk "$out" || exit 1
  RUN_CTL_PCT=$(awk -v t=$((ctl_after - ctl_before)) -v hz="$clk_tck" -v s="$start" -v e="$end" \
    'BEGIN {printf "%.2f", 100 * t / hz / (e - s)}')
  RUN_CPU_US=$(awk -v t=$((after - before)) -v hz="$clk_tck" -v n="$RUN_REQS" \
    'BEGIN {printf "%.2f", t / hz * 1e6 / n}')
}

echo "$bench_name: sizes ${sizes[*]}, $rounds rounds of $duration per mode, wrk -t$threads" \
  "-c$connections, fetch_interval ${fetch_interval}s, pinning: ${proxy_cpus[*]:-off}"
declare -A rps p99 cpu ctl ratios last_rps
for ((round = 1; round <= rounds; round++)); do
  for s in "${sizes[@]}"; do
    if ((round % 2)); then modes=(static discovered); else modes=(discovered static); fi
    for mode in "${modes[@]}"; do
      start_gateway "$mode" "$s"
      [[ $warmup == 0s ]] || run_wrk "$warmup" "$work/warmup-$mode-$s-$round.txt"
      run_wrk "$duration" "$work/wrk-$mode-$s-$round.txt"
      if ((RUN_ERRORS > 0)); then
        echo "$bench_name: $RUN_ERRORS errors ($mode, $s nodes, round $round)" >&2
        exit 1
      fi
      rps[$mode $s]+="$RUN_RPS "
      last_rps[$mode]=$RUN_RPS
      p99[$mode $s]+="$RUN_P99 "
      cpu[$mode $s]+="$RUN_CPU_US "
      ctl[$mode $s]+="$RUN_CTL_PCT "
      printf '  round %d  %6d nodes  %-10s %10.0f req/s  p99 %7.3f ms  %7.2f us CPU/req  control thread %5.2f%%\n' \
        "$round" "$s" "$mode" "$RUN_RPS" "$RUN_P99" "$RUN_CPU_US" "$RUN_CTL_PCT"
      stop_pid "$gw_pid"
    done
    # The two runs of a size are back to back: their ratio sees the same machine load.
    ratios[$s]+="$(awk -v a="${last_rps[discovered]}" -v b="${last_rps[static]}" \
      'BEGIN {printf "%.1f", 1000 * a / b}') "
  done
done

echo
printf '%8s %14s %14s %8s %9s %12s %12s %14s %14s %10s\n' nodes "static req/s" "disc. req/s" ratio \
  "ratio/rd" "static p99" "disc. p99" "static us/req" "disc. us/req" "disc. ctl"
for s in "${sizes[@]}"; do
  # shellcheck disable=SC2086  # the per-round values are space-separated on purpose
  {
    sr=$(median ${rps[static $s]})
    dr=$(median ${rps[discovered $s]})
    sp=$(median ${p99[static $s]})
    dp=$(median ${p99[discovered $s]})
    sc=$(median ${cpu[static $s]})
    dc=$(median ${cpu[discovered $s]})
    dl=$(median ${ctl[discovered $s]})
  }
  # shellcheck disable=SC2086
  rr=$(awk -v m="$(median ${ratios[$s]})" 'BEGIN {printf "%.3f", m / 1000}')  # per mille
  printf '%8d %14.0f %14.0f %7.3fx %8.3fx %10.3fms %10.3fms %14.2f %14.2f %9.2f%%\n' "$s" "$sr" \
    "$dr" "$(awk -v a="$dr" -v b="$sr" 'BEGIN {printf "%.3f", a / b}')" "$rr" "$sp" "$dp" "$sc" \
    "$dc" "$dl"
done
