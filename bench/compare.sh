#!/usr/bin/env bash
# Side-by-side load test on loopback: Turnpike vs nginx as reverse proxies in front of the same
# upstream (an nginx answering `hello world` on /hello).
#
#   wrk -> Turnpike (1 worker) ----\
#                                   +--> upstream nginx (1 worker, return 200 "hello world\n")
#   wrk -> nginx proxy (1 worker) --/
#
# For every round, each proxy gets one wrk run (order alternates between rounds). Around each
# run the proxy's CPU time (utime + stime from /proc/<pid>/stat: the Turnpike process, the
# nginx worker) is sampled, giving CPU µs per request. At the end: medians and ratios.
#
# Usage: bench/compare.sh
# Env:   DURATION=10s     length of each wrk run
#        ROUNDS=3         rounds (each runs every proxy once)
#        CONNECTIONS=50   wrk connections (-c);   THREADS=1  wrk threads (-t)
#        WARMUP=2s        one unmeasured run per proxy before round 1 (0 = none)
#        PROXIES="turnpike nginx"   which proxies to run (e.g. PROXIES=nginx)
#        TURNPIKE_BIN     gateway binary (default build/release/src/daemon/turnpike)
#        PIN=auto         auto|1|0: pin the proxies to CPU 0 and wrk + upstream to the other
#                         CPUs (auto = when there are at least 2 CPUs and taskset exists)
#        KEEP=0           1 = keep the work directory (configs, logs, raw wrk output)
#        IDLE=0           after the rounds: hold this many idle keep-alive connections (each
#                         after one answered request) to each proxy and report the proxy's
#                         RSS growth per connection (VmRSS of the Turnpike process / the nginx
#                         worker, before and after)
#        SLOWLORIS=0      after the rounds: ROUNDS more wrk runs per proxy while this many
#                         slowloris clients trickle unfinished heads (bench/hold_clients.py),
#                         reporting p99 with and without them
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
pin=${PIN:-auto}
keep=${KEEP:-0}

for p in "${proxies[@]}"; do
  [[ $p == turnpike || $p == nginx ]] || { echo "compare: unknown proxy '$p'" >&2; exit 2; }
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "compare: ROUNDS must be a positive integer" >&2; exit 2; }

turnpike_ensure_packages "${TURNPIKE_BENCH_DEPS[@]}" curl python3
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

# CPU placement -------------------------------------------------------------------------------
ncpu=$(nproc)
proxy_cpus=()
load_cpus=()
if [[ $pin == 1 || ($pin == auto && $ncpu -ge 2) ]] && command -v taskset >/dev/null 2>&1 &&
  ((ncpu >= 2)); then
  proxy_cpus=(taskset -c 0)
  load_cpus=(taskset -c "1-$((ncpu - 1))")
fi

# Work directory and cleanup -------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/turnpike-bench.XXXXXX")
chmod 755 "$work"  # nginx workers may run as an unprivileged user
started_pids=()
wrk_pid=

stop_pid() {  # stop_pid PID: SIGTERM, up to 5 s, then SIGKILL; reaps our own children.
  local pid=$1 i
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local i pid orphans=()
  [[ -n $wrk_pid ]] && stop_pid "$wrk_pid"
  for ((i = ${#started_pids[@]} - 1; i >= 0; i--)); do
    pid=${started_pids[i]}
    # An nginx master stops its workers itself; remember them in case it had to be killed.
    mapfile -t -O "${#orphans[@]}" orphans < <(children_of "$pid")
    stop_pid "$pid"
  done
  for pid in "${orphans[@]}"; do
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  done
  if [[ $keep == 1 ]]; then
    echo "compare: work directory kept: $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Ports ------------------------------------------------------------------------------------------
handed_out=()

port_in_use() {
  local p=$1 u
  for u in "${handed_out[@]}"; do [[ $u == "$p" ]] && return 0; done
  # Something accepts connections there?
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then return 0; fi
  # Bound but maybe not accepting (or listening on another address)?
  if command -v ss >/dev/null 2>&1 && [[ -n $(ss -Htan "sport = :$p" 2>/dev/null) ]]; then
    return 0
  fi
  return 1
}

# free_port: sets REPLY to a port in 20000-29999 (below Linux's ephemeral range) that nothing
# uses and that this script has not handed out yet.
free_port() {
  local p=$((20000 + RANDOM % 10000)) i
  for ((i = 0; i < 10000; i++)); do
    if ! port_in_use "$p"; then
      handed_out+=("$p")
      REPLY=$p
      return 0
    fi
    p=$((20000 + (p - 20000 + 1) % 10000))
  done
  echo "compare: no free port found" >&2
  return 1
}

# Processes --------------------------------------------------------------------------------------
# wait_ready NAME PID URL LOG: waits up to 10 s for URL to answer `hello world`.
wait_ready() {
  local name=$1 pid=$2 url=$3 log=$4 i body
  for ((i = 0; i < 100; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "compare: $name exited during start-up; its log ($log):" >&2
      cat "$log" >&2 || true
      exit 1
    fi
    body=$(curl -fsS --max-time 1 "$url" 2>/dev/null || true)
    if [[ $body == "hello world" ]]; then return 0; fi
    sleep 0.1
  done
  echo "compare: $name did not answer 'hello world' on $url within 10 s; log ($log):" >&2
  cat "$log" >&2 || true
  exit 1
}

# children_of PID: prints the PIDs whose parent is PID (no procps needed).
children_of() {
  local parent=$1 f stat fields
  for f in /proc/[0-9]*/stat; do
    { stat=$(<"$f"); } 2>/dev/null || continue
    stat=${stat##*) }
    read -r -a fields <<<"$stat"
    [[ ${fields[1]} == "$parent" ]] && { f=${f#/proc/}; printf '%s\n' "${f%/stat}"; }
  done
  return 0
}

# cpu_ticks PID...: utime + stime (clock ticks) summed over the given processes (all threads).
cpu_ticks() {
  local total=0 pid stat fields
  for pid in "$@"; do
    stat=$(<"/proc/$pid/stat")
    stat=${stat##*) }  # fields after the command name, which may contain spaces
    read -r -a fields <<<"$stat"
    total=$((total + fields[11] + fields[12]))  # fields 14 and 15 of proc(5)
  done
  echo "$total"
}

nginx_common() {  # nginx_common DIR: the main-context and http-context lines both nginx use
  local dir=$1
  cat <<EOF
worker_processes 1;
daemon off;
master_process on;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 65536; }
EOF
}

nginx_temp_paths() {
  local dir=$1
  cat <<EOF
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
EOF
}

# start_nginx NAME CPU-PREFIX...: runs nginx with $work/NAME/nginx.conf; sets REPLY to the
# master's PID.
start_nginx() {
  local name=$1 dir=$work/$1
  shift
  "$@" nginx -p "$dir/" -c "$dir/nginx.conf" >"$dir/nginx.log" 2>&1 &
  REPLY=$!
  started_pids+=("$REPLY")
}

# Upstream: nginx answering `hello world` ---------------------------------------------------------
free_port
up_port=$REPLY
mkdir -p "$work/upstream/tmp"
{
  nginx_common "$work/upstream"
  cat <<EOF
http {
    access_log off;
$(nginx_temp_paths "$work/upstream")
    keepalive_requests 1000000;
    keepalive_timeout 60s;
    server {
        listen 127.0.0.1:$up_port backlog=4096;
        location = /hello {
            default_type text/plain;
            return 200 "hello world\n";
        }
    }
}
EOF
} >"$work/upstream/nginx.conf"
start_nginx upstream "${load_cpus[@]}"
upstream_pid=$REPLY
wait_ready "upstream nginx" "$upstream_pid" "http://127.0.0.1:$up_port/hello" \
  "$work/upstream/error.log"

# Proxies ----------------------------------------------------------------------------------------
declare -A proxy_url proxy_cpu_pids proxy_label

start_turnpike() {
  local dir=$work/turnpike port pid
  free_port
  port=$REPLY
  mkdir -p "$dir"
  cat >"$dir/config.yaml" <<EOF
apisix:
  node_listen:
    - ip: 127.0.0.1
      port: $port
  enable_ipv6: false
deployment:
  role: data_plane
  role_data_plane:
    config_provider: yaml
nginx_config:
  worker_processes: 1
  error_log_level: warn
  http:
    keepalive_timeout: 60s
    upstream:
      keepalive: 320
      keepalive_requests: 1000
      keepalive_timeout: 60s
EOF
  cat >"$dir/apisix.yaml" <<EOF
routes:
  - id: hello
    uri: /hello
    upstream:
      type: roundrobin
      nodes:
        "127.0.0.1:$up_port": 1
#END
EOF
  "${proxy_cpus[@]}" "$turnpike_bin" -c "$dir/config.yaml" >"$dir/turnpike.log" 2>&1 &
  pid=$!
  started_pids+=("$pid")
  wait_ready turnpike "$pid" "http://127.0.0.1:$port/hello" "$dir/turnpike.log"
  proxy_url[turnpike]=http://127.0.0.1:$port/hello
  proxy_cpu_pids[turnpike]=$pid
  proxy_label[turnpike]="turnpike (pid $pid)"
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
    upstream backend {
        server 127.0.0.1:$up_port;
        keepalive 320;
    }
    server {
        listen 127.0.0.1:$port backlog=4096;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Real-IP \$remote_addr;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_set_header X-Forwarded-Host \$host;
            proxy_set_header X-Forwarded-Port \$server_port;
        }
    }
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

for p in "${proxies[@]}"; do
  case $p in
    turnpike) start_turnpike ;;
    nginx) start_nginx_proxy ;;
  esac
done

clk_tck=$(getconf CLK_TCK)

# Runs ---------------------------------------------------------------------------------------------
declare -A results  # "<proxy> <metric>" -> space-separated values, one per round

to_ms() {  # wrk latency (e.g. 812.00us, 1.23ms, 2.01s) -> milliseconds
  awk -v v="$1" 'BEGIN {
    if (v ~ /us$/) { sub(/us$/, "", v); printf "%.3f", v / 1000 }
    else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.3f", v }
    else if (v ~ /m$/) { sub(/m$/, "", v); printf "%.3f", v * 60000 }
    else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.3f", v * 1000 }
    else printf "nan" }'
}

# run_wrk PROXY DURATION OUTFILE: one wrk run with CPU sampling; sets the RUN_* variables.
run_wrk() {
  local proxy=$1 dur=$2 out=$3 pids pid before after
  read -r -a pids <<<"${proxy_cpu_pids[$proxy]}"
  for pid in "${pids[@]}"; do
    if [[ ! -e /proc/$pid/stat ]]; then
      echo "compare: $proxy (pid $pid) is gone; logs in $work (KEEP=1 keeps them)" >&2
      exit 1
    fi
  done
  before=$(cpu_ticks "${pids[@]}")
  # In the background so that a signal to this script is handled at once (see the traps).
  "${load_cpus[@]}" wrk -t"$threads" -c"$connections" -d"$dur" --latency \
    "${proxy_url[$proxy]}" >"$out" 2>&1 &
  wrk_pid=$!
  wait "$wrk_pid" || true
  wrk_pid=
  after=$(cpu_ticks "${pids[@]}")
  RUN_RPS=$(awk '/^Requests\/sec:/ {print $2}' "$out")
  RUN_REQS=$(awk '/ requests in / {print $1}' "$out")
  RUN_P50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$out")")
  RUN_P99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
  RUN_ERRORS=$(awk '/Non-2xx or 3xx responses:/ {n += $NF}
                    /Socket errors:/ {gsub(/,/, ""); n += $4 + $6 + $8 + $10}
                    END {print n + 0}' "$out")
  if [[ -z $RUN_RPS || -z $RUN_REQS || $RUN_REQS == 0 ]]; then
    echo "compare: wrk against $proxy produced no result; its output ($out):" >&2
    cat "$out" >&2
    exit 1
  fi
  RUN_CPU_US=$(awk -v t=$((after - before)) -v hz="$clk_tck" -v n="$RUN_REQS" \
    'BEGIN {printf "%.2f", t / hz * 1e6 / n}')
}

median() {
  printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1}
    END {if (NR % 2) printf "%.2f", a[(NR + 1) / 2]; else printf "%.2f", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

row_fmt='%-10s %12s %10s %10s %14s %8s\n'

echo "compare: $(nginx -v 2>&1); $(wrk -v 2>&1 | head -n1 | cut -d' ' -f1-2); ${ncpu} CPUs;" \
  "pinning: ${proxy_cpus[*]:-off}${load_cpus[*]:+ (wrk + upstream: ${load_cpus[*]})}"
for p in "${proxies[@]}"; do echo "compare: ${proxy_label[$p]} at ${proxy_url[$p]}"; done
echo "compare: wrk -t$threads -c$connections -d$duration --latency, $rounds round(s)"

if [[ $warmup != 0s ]]; then
  for p in "${proxies[@]}"; do
    run_wrk "$p" "$warmup" "$work/warmup-$p.txt"
  done
fi

for ((round = 1; round <= rounds; round++)); do
  order=("${proxies[@]}")
  if ((round % 2 == 0)); then  # alternate who goes first, so drift hits both alike
    order=()
    for ((i = ${#proxies[@]} - 1; i >= 0; i--)); do order+=("${proxies[i]}"); done
  fi
  echo
  echo "round $round/$rounds"
  # shellcheck disable=SC2059
  printf "$row_fmt" proxy "req/s" "p50 ms" "p99 ms" "CPU us/req" errors
  for p in "${order[@]}"; do
    run_wrk "$p" "$duration" "$work/round$round-$p.txt"
    results["$p rps"]+="$RUN_RPS "
    results["$p p99"]+="$RUN_P99 "
    results["$p cpu"]+="$RUN_CPU_US "
    # shellcheck disable=SC2059
    printf "$row_fmt" "$p" "$RUN_RPS" "$RUN_P50" "$RUN_P99" "$RUN_CPU_US" "$RUN_ERRORS"
    if [[ $RUN_ERRORS != 0 ]]; then
      echo "  warning: $RUN_ERRORS errors/non-2xx responses (see $work/round$round-$p.txt)"
    fi
  done
done

echo
echo "median of $rounds round(s)"
# shellcheck disable=SC2059
printf "$row_fmt" proxy "req/s" "" "p99 ms" "CPU us/req" ""
declare -A med
for p in "${proxies[@]}"; do
  for m in rps p99 cpu; do
    read -r -a vals <<<"${results["$p $m"]}"
    med["$p $m"]=$(median "${vals[@]}")
  done
  # shellcheck disable=SC2059
  printf "$row_fmt" "$p" "${med["$p rps"]}" "" "${med["$p p99"]}" "${med["$p cpu"]}" ""
done

if [[ -n ${med["turnpike rps"]:-} && -n ${med["nginx rps"]:-} ]]; then
  echo
  awk -v tr="${med["turnpike rps"]}" -v nr="${med["nginx rps"]}" \
    -v tp="${med["turnpike p99"]}" -v np="${med["nginx p99"]}" \
    -v tc="${med["turnpike cpu"]}" -v nc="${med["nginx cpu"]}" 'BEGIN {
      printf "turnpike/nginx  req/s %.2fx (higher is better)  p99 %.2fx  CPU/req %.2fx (lower is better)\n",
        (nr > 0 ? tr / nr : 0), (np > 0 ? tp / np : 0), (nc > 0 ? tc / nc : 0) }'
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
    hold slowloris "$p" "$slowloris"
    vals=()
    for ((round = 1; round <= rounds; round++)); do
      run_wrk "$p" "$duration" "$work/slowloris$round-$p.txt"
      vals+=("$RUN_P99")
    done
    stop_pid "$HOLD_PID"
    with=$(median "${vals[@]}")
    printf '%-10s %12s %12s %10s\n' "$p" "${med["$p p99"]}" "$with" \
      "$(awk -v a="$with" -v b="${med["$p p99"]}" 'BEGIN {printf "%.2fx", (b > 0 ? a / b : 0)}')"
  done
fi
