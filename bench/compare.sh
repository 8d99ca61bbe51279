#!/usr/bin/env bash
# Side-by-side load test on loopback: Turnpike vs nginx as reverse proxies in front of the same
# upstream (an nginx answering `hello world` on /hello).
#
#   wrk -> Turnpike (1 worker) ----\
#                                   +--> upstream nginx (1 worker, return 200 "hello world\n")
#   wrk -> nginx proxy (1 worker) --/
#
# For every round, each proxy gets one wrk run (each takes every place in turn). Around each
# run the proxy's CPU time (utime + stime from /proc/<pid>/stat: the Turnpike process, the
# nginx worker) is sampled, giving CPU µs per request, also split into user and system (kernel)
# time. At the end: medians and ratios, and the median of each round's CPU ratio (the two runs
# of a round are back to back, so it is the steadier figure on a busy machine).
#
# Usage: bench/compare.sh
# Env:   DURATION=10s     length of each wrk run
#        ROUNDS=3         rounds (each runs every proxy once)
#        CONNECTIONS=50   wrk connections (-c);   THREADS=1  wrk threads (-t)
#        WARMUP=2s        one unmeasured run per proxy before round 1 (0 = none)
#        PROXIES="turnpike nginx"   which proxies to run (e.g. PROXIES=nginx)
#        TURNPIKE_BIN     gateway binary (default build/release/src/daemon/turnpike)
#        BASE_BIN         a second Turnpike binary, run as the proxy "base" (PROXIES="turnpike
#                         base nginx"): A/B of two builds on the same route, side by side
#                         PROXIES may also name floor proxies (bench/floor_proxy.cc): floor-epoll
#                         (level-triggered epoll + read(2), libuv's model), floor-epollet
#                         (edge-triggered + recv(2), nginx's), floor-epollbatch (as
#                         floor-epoll, each loop turn's sends after its last event), floor-uring (io_uring, where
#                         liburing was found at build time): the least a proxy does per request
#                         under each I/O model, so the kernel's share of a request on this
#                         machine, and what another model would save. Each is compared with
#                         nginx, and Turnpike with each. FLOOR_BIN: default
#                         build/release/bench/floor_proxy
#        PIN=auto         auto|1|0: pin the proxies to CPU 0 and wrk + upstream to the other
#                         CPUs (auto = when there are at least 2 CPUs and taskset exists)
#        KEEP=0           1 = keep the work directory (configs, logs, raw wrk output)
#        PAUSE_DAMON=0    1 = pause the kernel's DAMON monitors for the run (bench/lib/loadtest.sh)
#        IDLE=0           after the rounds: hold this many idle keep-alive connections (each
#                         after one answered request) to each proxy and report the proxy's
#                         RSS growth per connection (VmRSS of the Turnpike process / the nginx
#                         worker, before and after)
#        SLOWLORIS=0      after the rounds: ROUNDS more wrk runs per proxy while this many
#                         slowloris clients trickle unfinished heads (bench/hold_clients.py),
#                         reporting p99 with and without them
#        SCENARIOS=plain  space-separated: "plain" (GET /hello) or NAME for the wrk Lua script
#                         bench/wrk/NAME.lua; every proxy runs every scenario each round, and
#                         each later scenario is also compared with the first (e.g.
#                         SCENARIOS="stable_key rotate_keys": APISIX PR #14141's story)
#        PLUGINS_YAML     a file with the `plugins:` map of Turnpike's route (bench/chain.yaml:
#                         limit-count + proxy-rewrite + prometheus); nginx stays a plain proxy
#        CONFIG_EXTRA     YAML text appended to Turnpike's config.yaml (plugin_attr, ...)
#        PERF=0           1 = sample each measured run's proxy processes with `perf record -e
#                         cpu-clock` (user and kernel, in their context) and print, per run,
#                         the nanoseconds per request by symbol, medians over the rounds, and
#                         the differences between proxies (bench/perf_per_req.py). Sampling
#                         costs CPU: read the CPU figures of such a run as perturbed.
#
# Both proxies do comparable work: HTTP/1.1 keep-alive to the upstream (pool of 320), client
# keep-alive without a per-connection request cap, no access log, and the forwarding headers
# APISIX sets (Host, X-Real-IP, X-Forwarded-For/-Proto/-Host/-Port).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"

duration=${DURATION:-10s}
[[ $duration =~ ^[0-9]+$ ]] && duration=${duration}s
warmup=${WARMUP:-2s}
[[ $warmup =~ ^[0-9]+$ ]] && warmup=${warmup}s
rounds=${ROUNDS:-3}
connections=${CONNECTIONS:-50}
threads=${THREADS:-1}
read -r -a proxies <<<"${PROXIES:-turnpike nginx}"
turnpike_bin=${TURNPIKE_BIN:-$root/build/release/src/daemon/turnpike}
floor_bin=${FLOOR_BIN:-$root/build/release/bench/floor_proxy}
base_bin=${BASE_BIN:-}
pin=${PIN:-auto}
keep=${KEEP:-0}
plugins_yaml=${PLUGINS_YAML:-}
config_extra=${CONFIG_EXTRA:-}
perf_on=${PERF:-0}
read -r -a scenarios <<<"${SCENARIOS:-plain}"

for p in "${proxies[@]}"; do
  case $p in
    turnpike | base | nginx) ;;
    floor-epoll | floor-epollet | floor-epollbatch | floor-uring)
      [[ -x $floor_bin ]] || { echo "compare: $p needs $floor_bin (ninja floor_proxy)" >&2; exit 2; } ;;
    *) echo "compare: unknown proxy '$p'" >&2; exit 2 ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "compare: ROUNDS must be a positive integer" >&2; exit 2; }
for s in "${scenarios[@]}"; do
  [[ $s == plain || -f $root/bench/wrk/$s.lua ]] ||
    { echo "compare: unknown scenario '$s' (no bench/wrk/$s.lua)" >&2; exit 2; }
done
if [[ -n $plugins_yaml ]]; then
  [[ -f $plugins_yaml ]] || { echo "compare: PLUGINS_YAML: no file $plugins_yaml" >&2; exit 2; }
  plugins_yaml=$(realpath "$plugins_yaml")
fi

turnpike_ensure_packages "${TURNPIKE_BENCH_DEPS[@]}" curl python3
if [[ $perf_on == 1 ]] && ! command -v perf >/dev/null 2>&1; then
  echo "compare: PERF=1 needs perf (apt-get install linux-perf)" >&2
  exit 2
fi
idle=${IDLE:-0}
slowloris=${SLOWLORIS:-0}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

if [[ " ${proxies[*]} " == *" turnpike "* && ! -x $turnpike_bin ]]; then
  cat >&2 <<EOF
compare: no Turnpike binary at $turnpike_bin
  build one:  cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release
              cmake --build build/release --target turnpike
  or set TURNPIKE_BIN=/path/to/turnpike (or PROXIES=nginx for the nginx side alone)
EOF
  exit 1
fi
if [[ " ${proxies[*]} " == *" base "* && ! -x $base_bin ]]; then
  echo "compare: the proxy 'base' needs BASE_BIN, another Turnpike binary" >&2
  exit 2
fi

# CPU placement -------------------------------------------------------------------------------
ncpu=$(nproc)
proxy_cpus=()
load_cpus=()
if [[ $pin == 1 || ($pin == auto && $ncpu -ge 2) ]] && command -v taskset >/dev/null 2>&1 &&
  ((ncpu >= 2)); then
  proxy_cpus=(taskset -c 0)
  load_cpus=(taskset -c "1-$((ncpu - 1))")
fi

# Shared load-test pieces ---------------------------------------------------------------------------
bench_name=compare
# shellcheck source=bench/lib/loadtest.sh
source "$root/bench/lib/loadtest.sh"

# Upstream and proxies --------------------------------------------------------------------------
start_upstream_nginx
declare -A proxy_url proxy_cpu_pids proxy_label

# start_turnpike [NAME BINARY]: Turnpike (or, as NAME, another build of it) on the route.
start_turnpike() {
  local name=${1:-turnpike} dir=$work/${1:-turnpike} plugins=
  mkdir -p "$dir"
  if [[ -n $plugins_yaml ]]; then
    plugins=$'    plugins:\n'$(sed 's/^/      /' "$plugins_yaml")
  fi
  cat >"$dir/apisix.yaml" <<EOF
routes:
  - id: hello
    uri: /hello
$plugins
    upstream:
      type: roundrobin
      nodes:
        "127.0.0.1:$up_port": 1
#END
EOF
  turnpike_bin=${2:-$turnpike_bin} start_turnpike_process "$dir" "$config_extra" \
    "${proxy_cpus[@]}"
  proxy_url[$name]=http://127.0.0.1:$TURNPIKE_PORT/hello
  proxy_cpu_pids[$name]=$TURNPIKE_PID
  proxy_label[$name]="$name (pid $TURNPIKE_PID${2:+, $2})"
}

start_nginx_proxy() {
  local dir=$work/nginx port master workers
  free_port
  port=$REPLY
  mkdir -p "$dir/tmp"
  {
    nginx_common "$dir"
    cat <<EOF
http {
    access_log off;
$(nginx_temp_paths "$dir")
    keepalive_requests 1000000;
    keepalive_timeout 60s;
$(nginx_proxy_upstream_server "$up_port" 320 "127.0.0.1:$port backlog=4096")
}
EOF
  } >"$dir/nginx.conf"
  start_nginx nginx "${proxy_cpus[@]}"
  master=$REPLY
  wait_ready "nginx proxy" "$master" "http://127.0.0.1:$port/hello" "$dir/error.log"
  workers=$(children_of "$master" | tr '\n' ' ')
  workers=${workers% }
  if [[ -z $workers ]]; then
    echo "compare: cannot find the nginx proxy's worker process" >&2
    exit 1
  fi
  proxy_url[nginx]=http://127.0.0.1:$port/hello
  proxy_cpu_pids[nginx]=$workers
  proxy_label[nginx]="nginx (worker pid $workers)"
}

# start_floor NAME: bench/floor_proxy in the model NAME names (floor-MODEL), on its own port.
start_floor() {
  local name=$1 dir=$work/$1 port pid
  mkdir -p "$dir"
  free_port
  port=$REPLY
  "${proxy_cpus[@]}" "$floor_bin" "${name#floor-}" "$port" "$up_port" >"$dir/floor.log" 2>&1 &
  pid=$!
  started_pids+=("$pid")
  wait_ready "$name" "$pid" "http://127.0.0.1:$port/hello" "$dir/floor.log"
  proxy_url[$name]=http://127.0.0.1:$port/hello
  proxy_cpu_pids[$name]=$pid
  proxy_label[$name]="$name (pid $pid)"
}

for p in "${proxies[@]}"; do
  case $p in
    turnpike) start_turnpike ;;
    base) start_turnpike base "$base_bin" ;;
    nginx) start_nginx_proxy ;;
    floor-*) start_floor "$p" ;;
  esac
done

clk_tck=$(getconf CLK_TCK)

# Runs ---------------------------------------------------------------------------------------------
# A run is one proxy under one scenario: "plain" (GET /hello) or a wrk Lua script
# bench/wrk/<scenario>.lua (rotating keys, paced requests, ...). Its label is the proxy's name,
# or proxy/scenario when SCENARIOS names more than "plain".
run_list=()
declare -A run_proxy run_scenario
for p in "${proxies[@]}"; do
  for s in "${scenarios[@]}"; do
    label=$p
    [[ ${scenarios[*]} == plain ]] || label=$p/$s
    run_list+=("$label")
    run_proxy[$label]=$p
    run_scenario[$label]=$s
  done
done
declare -A results  # "<label> <metric>" -> space-separated values, one per round
perf_runs=()        # PERF=1: LABEL FILE REQUESTS triples, one per measured run

# run_wrk LABEL DURATION OUTFILE [PERFFILE]: one wrk run with CPU sampling; sets the RUN_*
# variables. With PERFFILE, the proxy's processes are sampled by perf into it meanwhile.
run_wrk() {
  local label=$1 dur=$2 out=$3 perf_file=${4:-} proxy=${run_proxy[$1]}
  local scenario=${run_scenario[$1]} pids pid perf_pid=
  local before after script=() user sys
  [[ $scenario == plain ]] || script=(-s "$root/bench/wrk/$scenario.lua")
  read -r -a pids <<<"${proxy_cpu_pids[$proxy]}"
  for pid in "${pids[@]}"; do
    if [[ ! -e /proc/$pid/stat ]]; then
      echo "compare: $proxy (pid $pid) is gone; logs in $work (KEEP=1 keeps them)" >&2
      exit 1
    fi
  done
  if [[ -n $perf_file ]]; then
    perf_sample "$perf_file" "${pids[@]}"
    perf_pid=$PERF_SAMPLE_PID
  fi
  read -r user sys <<<"$(cpu_ticks_split "${pids[@]}")"
  # In the background so that a signal to this script is handled at once (see the traps).
  "${load_cpus[@]}" wrk -t"$threads" -c"$connections" -d"$dur" --latency "${script[@]}" \
    "${proxy_url[$proxy]}" >"$out" 2>&1 &
  wrk_pid=$!
  wait "$wrk_pid" || true
  wrk_pid=
  read -r after_user after_sys <<<"$(cpu_ticks_split "${pids[@]}")"
  [[ -z $perf_pid ]] || perf_sample_stop "$perf_pid"
  parse_wrk "$out" || exit 1
  read -r RUN_CPU_US RUN_USER_US RUN_SYS_US < <(awk -v u=$((after_user - user)) \
    -v s=$((after_sys - sys)) -v hz="$clk_tck" -v n="$RUN_REQS" \
    'BEGIN {f = 1e6 / hz / n; printf "%.2f %.2f %.2f\n", (u + s) * f, u * f, s * f}')
}

row_fmt='%-22s %12s %10s %10s %14s %9s %9s %8s\n'

echo "compare: $(nginx -v 2>&1); $(wrk -v 2>&1 | head -n1 | cut -d' ' -f1-2); ${ncpu} CPUs;" \
  "pinning: ${proxy_cpus[*]:-off}${load_cpus[*]:+ (wrk + upstream: ${load_cpus[*]})}"
for p in "${proxies[@]}"; do echo "compare: ${proxy_label[$p]} at ${proxy_url[$p]}"; done
[[ -n $plugins_yaml ]] && echo "compare: Turnpike's route runs the plugins of $plugins_yaml"
echo "compare: wrk -t$threads -c$connections -d$duration --latency, $rounds round(s)," \
  "scenarios: ${scenarios[*]}"

if [[ $warmup != 0s ]]; then
  for r in "${run_list[@]}"; do
    run_wrk "$r" "$warmup" "$work/warmup-${r//\//-}.txt"
  done
fi

for ((round = 1; round <= rounds; round++)); do
  # Every run takes every place in turn: the list rotated by one more each round, and in
  # reverse every other cycle, so drift within a round hits all alike (swapping only who goes
  # first kept a third proxy in the middle of every round).
  n_runs=${#run_list[@]}
  shift_by=$(((round - 1) % n_runs))
  order=("${run_list[@]:shift_by}" "${run_list[@]:0:shift_by}")
  if ((((round - 1) / n_runs) % 2 == 1)); then
    reversed=()
    for ((i = n_runs - 1; i >= 0; i--)); do reversed+=("${order[i]}"); done
    order=("${reversed[@]}")
  fi
  echo
  echo "round $round/$rounds"
  # shellcheck disable=SC2059
  printf "$row_fmt" run "req/s" "p50 ms" "p99 ms" "CPU us/req" "user us" "sys us" errors
  for r in "${order[@]}"; do
    out=$work/round$round-${r//\//-}.txt
    perf_file=
    if [[ $perf_on == 1 ]]; then
      mkdir -p "$work/perf"
      perf_file=$work/perf/round$round-${r//\//-}.data
    fi
    run_wrk "$r" "$duration" "$out" "$perf_file"
    [[ -z $perf_file ]] || perf_runs+=("$r" "$perf_file" "$RUN_REQS")
    results["$r rps"]+="$RUN_RPS "
    results["$r p99"]+="$RUN_P99 "
    results["$r cpu"]+="$RUN_CPU_US "
    results["$r user"]+="$RUN_USER_US "
    results["$r sys"]+="$RUN_SYS_US "
    # shellcheck disable=SC2059
    printf "$row_fmt" "$r" "$RUN_RPS" "$RUN_P50" "$RUN_P99" "$RUN_CPU_US" "$RUN_USER_US" \
      "$RUN_SYS_US" "$RUN_ERRORS"
    if [[ $RUN_ERRORS != 0 ]]; then
      echo "  warning: $RUN_ERRORS errors/non-2xx responses (see $out)"
    fi
  done
done

echo
echo "median of $rounds round(s)"
# shellcheck disable=SC2059
printf "$row_fmt" run "req/s" "" "p99 ms" "CPU us/req" "user us" "sys us" ""
declare -A med
for r in "${run_list[@]}"; do
  for m in rps p99 cpu user sys; do
    read -r -a vals <<<"${results["$r $m"]}"
    med["$r $m"]=$(median "${vals[@]}")
  done
  # shellcheck disable=SC2059
  printf "$row_fmt" "$r" "${med["$r rps"]}" "" "${med["$r p99"]}" "${med["$r cpu"]}" \
    "${med["$r user"]}" "${med["$r sys"]}" ""
done

# ratio_line NAME A B: A's medians over B's; then, of the rounds' own CPU ratios (a round's two
# runs are back to back), the median and the geometric mean with its 90% confidence interval
# (geo_interval: what a target such as "<= 0.9x" is checked against, since single runs here
# spread by more than the gaps they measure); and the user / system parts of the CPU ratio
# (medians).
ratio_line() {
  local a b i ratios=() geo low high
  read -r -a a <<<"${results["$2 cpu"]}"
  read -r -a b <<<"${results["$3 cpu"]}"
  for i in "${!a[@]}"; do
    ratios+=("$(awk -v x="${a[i]}" -v y="${b[i]}" 'BEGIN {printf "%.4f", (y > 0 ? x / y : 0)}')")
  done
  read -r geo low high < <(geo_interval "${ratios[@]}")
  awk -v name="$1" -v tr="${med["$2 rps"]}" -v nr="${med["$3 rps"]}" \
    -v tp="${med["$2 p99"]}" -v np="${med["$3 p99"]}" \
    -v tc="${med["$2 cpu"]}" -v nc="${med["$3 cpu"]}" -v rr="$(median "${ratios[@]}")" \
    -v geo="$geo" -v low="$low" -v high="$high" \
    -v tu="${med["$2 user"]}" -v nu="${med["$3 user"]}" \
    -v ts="${med["$2 sys"]}" -v ns="${med["$3 sys"]}" 'BEGIN {
      printf "%-28s req/s %.2fx (higher is better)  p99 %.2fx  CPU/req %.2fx (lower is better)\n",
        name, (nr > 0 ? tr / nr : 0), (np > 0 ? tp / np : 0), (nc > 0 ? tc / nc : 0)
      printf "%-28s CPU/req: median of the rounds\047 ratios %.2fx; user %.2fx, system %.2fx\n",
        "", rr, (nu > 0 ? tu / nu : 0), (ns > 0 ? ts / ns : 0)
      printf "%-28s CPU/req: geometric mean of the rounds\047 ratios %.3fx, 90%% interval %s\n",
        "", geo, (low == "-" ? "- (one round)" : low "-" high) }'
}
echo
for s in "${scenarios[@]}"; do
  suffix=
  [[ ${scenarios[*]} == plain ]] || suffix=/$s
  pairs=(turnpike/nginx turnpike/base base/nginx)
  for p in "${proxies[@]}"; do
    if [[ $p == floor-* ]]; then pairs+=("$p/nginx" "turnpike/$p"); fi
  done
  for pair in "${pairs[@]}"; do
    a=${pair%/*} b=${pair#*/}
    if [[ -n ${med["$a$suffix rps"]:-} && -n ${med["$b$suffix rps"]:-} ]]; then
      ratio_line "$pair$suffix" "$a$suffix" "$b$suffix"
    fi
  done
done
if ((${#scenarios[@]} > 1)); then
  for p in "${proxies[@]}"; do
    for s in "${scenarios[@]:1}"; do
      ratio_line "$p: $s/${scenarios[0]}" "$p/$s" "$p/${scenarios[0]}"
    done
  done
fi

if ((${#perf_runs[@]} > 0)); then
  echo
  echo "where the CPU goes (PERF=1: perf record -e cpu-clock of each proxy's processes)"
  python3 "$root/bench/perf_per_req.py" --top "${PERF_TOP:-20}" "${perf_runs[@]}"
fi

# Many connections -------------------------------------------------------------------------------
rss_kb() {  # rss_kb PID...: VmRSS summed over the given processes, in kB
  local total=0 pid v
  for pid in "$@"; do
    v=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
    total=$((total + v))
  done
  echo "$total"
}

proxy_port() { local u=${proxy_url[$1]#http://127.0.0.1:}; echo "${u%%/*}"; }

# hold MODE PROXY COUNT: starts bench/hold_clients.py; sets HOLD_PID once it reports ready.
hold() {
  local fifo=$work/hold-$1-$2.out line
  python3 "$root/bench/hold_clients.py" "$1" "$(proxy_port "$2")" "$3" >"$fifo" 2>&1 &
  HOLD_PID=$!
  started_pids+=("$HOLD_PID")
  for ((i = 0; i < 600; i++)); do
    line=$(head -n1 "$fifo" 2>/dev/null || true)
    [[ $line == ready* ]] && return 0
    kill -0 "$HOLD_PID" 2>/dev/null || { echo "compare: hold_clients failed:" >&2; cat "$fifo" >&2; exit 1; }
    sleep 0.1
  done
  echo "compare: hold_clients did not get ready within 60 s" >&2
  exit 1
}

if ((idle > 0)); then
  echo
  echo "idle keep-alive connections: $idle per proxy"
  printf '%-10s %12s %12s %16s\n' proxy "RSS kB" "with idle" "bytes/conn"
  declare -A idle_bytes
  for p in "${proxies[@]}"; do
    read -r -a pids <<<"${proxy_cpu_pids[$p]}"
    before=$(rss_kb "${pids[@]}")
    hold idle "$p" "$idle"
    sleep 1
    after=$(rss_kb "${pids[@]}")
    stop_pid "$HOLD_PID"
    idle_bytes[$p]=$(((after - before) * 1024 / idle))
    printf '%-10s %12s %12s %16s\n' "$p" "$before" "$after" "${idle_bytes[$p]}"
  done
  if [[ -n ${idle_bytes[turnpike]:-} && -n ${idle_bytes[nginx]:-} ]]; then
    echo "turnpike/nginx  bytes per idle connection ${idle_bytes[turnpike]} / ${idle_bytes[nginx]}"
  fi
fi

if ((slowloris > 0)); then
  echo
  echo "p99 with $slowloris slowloris clients (median of $rounds run(s); without: the rounds above)"
  printf '%-10s %12s %12s %10s\n' proxy "p99 ms" "+slowloris" ratio
  for p in "${proxies[@]}"; do
    for r in "${run_list[@]}"; do [[ ${run_proxy[$r]} == "$p" ]] && break; done  # its first
    hold slowloris "$p" "$slowloris"
    vals=()
    for ((round = 1; round <= rounds; round++)); do
      run_wrk "$r" "$duration" "$work/slowloris$round-$p.txt"
      vals+=("$RUN_P99")
    done
    stop_pid "$HOLD_PID"
    with=$(median "${vals[@]}")
    printf '%-10s %12s %12s %10s\n' "$r" "${med["$r p99"]}" "$with" \
      "$(awk -v a="$with" -v b="${med["$r p99"]}" 'BEGIN {printf "%.2fx", (b > 0 ? a / b : 0)}')"
  done
fi
