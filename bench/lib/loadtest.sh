# Shared pieces of the load scripts in bench/ (compare.sh, scrape_under_load.sh): a work
# directory cleaned up on exit with every process the script started, free loopback ports,
# readiness waits, CPU and latency sampling, nginx as upstream or proxy, wrk runs, medians.
# Sourced; defines functions and the variables work, started_pids, wrk_pid, clk_tck.
# PAUSE_DAMON=1 (any script sourcing this): pause the kernel's DAMON monitors that are on
# (/sys/kernel/mm/damon/admin/kdamonds/*; the platform runs one doing proactive reclaim on these
# VMs, up to 50 ms of CPU a second in stretches of several ms on either CPU:
# docs/benchmarks.md) for the run, and turn them on again on exit. Off by default: a machine
# setting, changed only when asked.
# TCP_RTO_MIN_US=N (any script sourcing this; root, Linux 6.11+): the machine's minimum TCP RTO
# (net.ipv4.tcp_rto_min_us, default 200000) set to N for the run and put back on exit, like
# PAUSE_DAMON (node churn's "is it TCP's handling of a connection idle past its RTO?",
# docs/benchmarks.md, 2026-12-06).
# The sourcing script sets `keep` (1 = keep the work directory) and may set load_cpus (a
# taskset prefix for wrk), and names itself in `bench_name` for messages.

# shellcheck source=bench/lib/nginx_proxy.sh
turnpike_loadtest_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$turnpike_loadtest_dir/nginx_proxy.sh"

# Work directory and cleanup -------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/turnpike-$bench_name.XXXXXX")
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
  for i in "${damon_paused[@]}"; do
    echo on >"$i/state" 2>/dev/null || echo "$bench_name: could not turn $i on again" >&2
  done
  if [[ -n $rto_min_was ]]; then
    echo "$rto_min_was" >"$rto_min_knob" 2>/dev/null ||
      echo "$bench_name: could not put $rto_min_knob back to $rto_min_was" >&2
  fi
  if [[ $keep == 1 ]]; then
    echo "$bench_name: work directory kept: $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# DAMON ------------------------------------------------------------------------------------------
damon_paused=()  # kdamond directories this script turned off (cleanup turns them on)
if [[ ${PAUSE_DAMON:-0} == 1 ]]; then
  for d in /sys/kernel/mm/damon/admin/kdamonds/*; do
    [[ -f $d/state && $(cat "$d/state" 2>/dev/null) == on ]] || continue
    if echo off >"$d/state" 2>/dev/null; then
      damon_paused+=("$d")
    else
      echo "$bench_name: PAUSE_DAMON=1: cannot turn $d off (root?)" >&2
      exit 2
    fi
  done
  echo "$bench_name: DAMON paused for the run: ${damon_paused[*]:-(none was on)}"
fi

# TCP's minimum RTO -------------------------------------------------------------------------------
rto_min_knob=/proc/sys/net/ipv4/tcp_rto_min_us
rto_min_was=  # the value cleanup puts back (set once this script changed it)
if [[ -n ${TCP_RTO_MIN_US:-} ]]; then
  if ! [[ $TCP_RTO_MIN_US =~ ^[0-9]+$ ]] || ! [[ -w $rto_min_knob ]]; then
    echo "$bench_name: TCP_RTO_MIN_US wants microseconds and a writable $rto_min_knob (root, Linux 6.11+)" >&2
    exit 2
  fi
  was=$(<"$rto_min_knob")
  echo "$TCP_RTO_MIN_US" >"$rto_min_knob" || { echo "$bench_name: cannot set $rto_min_knob" >&2; exit 2; }
  rto_min_was=$was
  echo "$bench_name: TCP's minimum RTO for the run: $(<"$rto_min_knob") us (was $rto_min_was)"
fi

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
  echo "$bench_name: no free port found" >&2
  return 1
}

# Processes --------------------------------------------------------------------------------------
# wait_ready NAME PID URL LOG: waits up to 10 s for URL to answer `hello world`.
wait_ready() {
  local name=$1 pid=$2 url=$3 log=$4 i body
  for ((i = 0; i < 100; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$bench_name: $name exited during start-up; its log ($log):" >&2
      cat "$log" >&2 || true
      exit 1
    fi
    body=$(curl -fsS --max-time 1 "$url" 2>/dev/null || true)
    if [[ $body == "hello world" ]]; then return 0; fi
    sleep 0.1
  done
  echo "$bench_name: $name did not answer 'hello world' on $url within 10 s; log ($log):" >&2
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

# steal_ticks: time the VM's host took from its CPUs so far (clock ticks, all CPUs: the `steal`
# field of /proc/stat; 0 on bare metal). A vCPU waiting for the host, to run again or to wake
# from idle, stalls whatever it was about to run: in a run's p99 that is the host's, not the
# program's. Per run: 100 * delta / (CLK_TCK * seconds * nproc) is the share of the machine.
# perf_sample FILE PID...: starts `perf record -e cpu-clock` of the processes PID... into FILE in
# the background (its pid in PERF_SAMPLE_PID), after giving it time to attach;
# perf_sample_stop PID...: ends the samplers (perf writes FILE on SIGINT). For
# bench/perf_per_req.py, which reads a sample's period as the CPU time it stands for.
perf_sample() {
  local file=$1
  shift
  perf record -q -e cpu-clock -F 4999 -p "$(IFS=,; echo "$*")" -o "$file" >/dev/null 2>&1 &
  PERF_SAMPLE_PID=$!
  sleep 0.3  # perf attaches before the load starts
}
perf_sample_stop() {
  (($# > 0)) || return 0
  kill -INT "$@" 2>/dev/null || true
  wait "$@" || true
}

steal_ticks() { awk '$1 == "cpu" {print $9 + 0; exit}' /proc/stat; }

# cpu_ticks_split PID...: "utime stime" (clock ticks) summed over the given processes.
cpu_ticks_split() {
  local user=0 sys=0 pid stat fields
  for pid in "$@"; do
    stat=$(<"/proc/$pid/stat")
    stat=${stat##*) }
    read -r -a fields <<<"$stat"
    user=$((user + fields[11]))
    sys=$((sys + fields[12]))
  done
  echo "$user $sys"
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


to_ms() {  # wrk latency (e.g. 812.00us, 1.23ms, 2.01s) -> milliseconds
  awk -v v="$1" 'BEGIN {
    if (v ~ /us$/) { sub(/us$/, "", v); printf "%.3f", v / 1000 }
    else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.3f", v }
    else if (v ~ /m$/) { sub(/m$/, "", v); printf "%.3f", v * 60000 }
    else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.3f", v * 1000 }
    else printf "nan" }'
}

# median VALUE...: the median, with two decimals.
median() {
  printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1}
    END {if (NR % 2) printf "%.2f", a[(NR + 1) / 2]; else printf "%.2f", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

# geo_interval RATIO...: the geometric mean of per-round ratios and its two-sided 90% confidence
# interval (Student's t on the logs, the rounds taken as independent pairs of runs), as
# "MEAN LOW HIGH" with three decimals; "MEAN - -" for fewer than two ratios. A round's two runs
# run back to back in alternating order, so an order effect d gives ratios r * d and r / d:
# it widens the interval and cancels in the mean over an even number of rounds.
geo_interval() {
  printf '%s\n' "$@" | awk '
    {x[NR] = log($1); s += x[NR]}
    END {
      n = NR; m = s / n
      if (n < 2) {printf "%.3f - -\n", exp(m); exit}
      for (i = 1; i <= n; i++) v += (x[i] - m) ^ 2
      sd = sqrt(v / (n - 1))
      # t(0.95, df) for a two-sided 90% interval
      split("6.314 2.920 2.353 2.132 2.015 1.943 1.895 1.860 1.833 1.812 1.796 1.782 1.771 1.761 " \
            "1.753 1.746 1.740 1.734 1.729 1.725 1.721 1.717 1.714 1.711 1.708 1.706 1.703 1.701 " \
            "1.699 1.697", t, " ")
      df = n - 1
      tq = df <= 30 ? t[df] : 1.68
      h = tq * sd / sqrt(n)
      printf "%.3f %.3f %.3f\n", exp(m), exp(m - h), exp(m + h)
    }'
}


# hello_nginx_conf DIR LISTEN...: an nginx.conf answering `hello world` on every path of each
# `listen` value (ip:port, or a port for every local address), for many-node upstreams: up to
# 20,000 files, connections kept 300 s.
hello_nginx_conf() {
  local dir=$1 l
  shift
  {
    nginx_common "$dir"
    echo "worker_rlimit_nofile 20000;"
    echo "http {"
    echo "    access_log off;"
    nginx_temp_paths "$dir"
    echo "    keepalive_requests 1000000;"
    echo "    keepalive_timeout 300s;"
    echo "    server {"
    for l in "$@"; do echo "        listen $l;"; done
    # shellcheck disable=SC2028  # nginx reads the \n itself
    echo "        location / { default_type text/plain; return 200 \"hello world\n\"; }"
    echo "    }"
    echo "}"
  } >"$dir/nginx.conf"
}

# start_hello_backends PER_NGINX ADDR...: nginx processes answering `hello world` on every
# listen address ADDR (ip:port), PER_NGINX addresses each, on the load CPUs (load_cpus); each
# is ready before the next starts (many-node upstreams: discovery_nodes.sh, node_churn.sh).
start_hello_backends() {
  local per=$1 first name dir last
  shift
  local addrs=("$@")
  for ((first = 0; first < ${#addrs[@]}; first += per)); do
    name=nodes$first
    dir=$work/$name
    mkdir -p "$dir/tmp"
    hello_nginx_conf "$dir" "${addrs[@]:first:per}"
    start_nginx "$name" "${load_cpus[@]}"
    last=$((first + per < ${#addrs[@]} ? first + per - 1 : ${#addrs[@]} - 1))
    wait_ready "nginx $name" "$REPLY" "http://${addrs[last]}/hello" "$dir/error.log"
  done
}

# start_wildcard_backend PORT ADDR...: one nginx process answering `hello world` on PORT of every
# local address (one wildcard listening socket: each connection costs it one file, whatever
# the address), on the load CPUs, in $work/wildcard-PORT; ready when the first and the last
# ADDR (ip:port) answer.
start_wildcard_backend() {
  local port=$1 name=wildcard-$1 a
  local dir=$work/$name
  shift
  mkdir -p "$dir/tmp"
  hello_nginx_conf "$dir" "$port backlog=4096"
  start_nginx "$name" "${load_cpus[@]}"
  for a in "$1" "${@: -1}"; do
    wait_ready "nginx $name" "$REPLY" "http://$a/hello" "$dir/error.log"
  done
}

# merge_quantiles FILE...: "p50_ms p99_ms requests" over every request of the wrk runs whose
# quantiles FILE... hold (bench/wrk/quantile_file.lua), as if one run had made them all
# (bench/lib/quantiles.py says how).
merge_quantiles() {
  python3 "$turnpike_loadtest_dir/quantiles.py" merge "$@"
}

# pooled_quantile_ratio LIST [P]: the P-th percentile (default 99) over every request of the "B"
# runs against the same over every request of the "A" runs, with a paired bootstrap interval over
# rounds: "ratio low high a_ms b_ms rounds". LIST has a line per round, "A B", each a
# comma-separated list of that round's quantile files for the mode (bench/lib/quantiles.py).
# A pooled percentile is what one long run of each mode would read: a host stall lands in
# whichever run it hits and moves that run's own p99 (per-round ratios of 0.5-2.0 for the same
# code here), while the requests of all runs together weigh each stall by the requests it slowed.
pooled_quantile_ratio() {
  python3 "$turnpike_loadtest_dir/quantiles.py" pooled "$@"
}

# Upstream: nginx answering `hello world` on every path ------------------------------------------
# start_upstream_nginx: one nginx worker on the load CPUs; sets up_port.
start_upstream_nginx() {
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
        location / {
            default_type text/plain;
            return 200 "hello world\n";
        }
    }
}
EOF
  } >"$work/upstream/nginx.conf"
  start_nginx upstream "${load_cpus[@]}"
  wait_ready "upstream nginx" "$REPLY" "http://127.0.0.1:$up_port/hello" \
    "$work/upstream/error.log"
}

# Turnpike ---------------------------------------------------------------------------------------
# start_turnpike_process DIR EXTRA CPU-PREFIX...: writes DIR/config.yaml (one worker, loopback,
# keep-alive to the upstream as nginx's `keepalive 320`, error_log_level $TURNPIKE_LOG_LEVEL or
# warn; with $ACCESS_LOG_FORMAT set, an access log DIR/access.log in that format) with the YAML
# text EXTRA appended, and
# runs $turnpike_bin on it and DIR/apisix.yaml (written by the caller, with a route answering
# /hello). Sets TURNPIKE_PORT and TURNPIKE_PID once /hello answers.
start_turnpike_process() {
  local dir=$1 extra=$2 port pid
  shift 2
  free_port
  port=$REPLY
  local access_log=  # the format as a YAML single-quoted scalar (a quote in it doubled)
  [[ -n ${ACCESS_LOG_FORMAT:-} ]] &&
    printf -v access_log "    enable_access_log: true\n    access_log: %s/access.log\n    access_log_format: '%s'" \
      "$dir" "${ACCESS_LOG_FORMAT//\'/\'\'}"
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
  error_log_level: ${TURNPIKE_LOG_LEVEL:-warn}
  http:
    keepalive_timeout: 60s
    upstream:
      keepalive: 320
      keepalive_requests: 1000
      keepalive_timeout: 60s
$access_log
$extra
EOF
  "$@" "$turnpike_bin" -c "$dir/config.yaml" >"$dir/turnpike.log" 2>&1 &
  pid=$!
  started_pids+=("$pid")
  wait_ready turnpike "$pid" "http://127.0.0.1:$port/hello" "$dir/turnpike.log"
  TURNPIKE_PORT=$port
  TURNPIKE_PID=$pid
}

# parse_wrk FILE: wrk --latency output -> RUN_RPS, RUN_REQS, RUN_P50 / RUN_P99 (ms),
# RUN_ERRORS (socket errors and non-2xx/3xx answers). Fails, printing FILE, without a result.
parse_wrk() {
  local out=$1
  RUN_RPS=$(awk '/^Requests\/sec:/ {print $2}' "$out")
  RUN_REQS=$(awk '/ requests in / {print $1}' "$out")
  RUN_P50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$out")")
  RUN_P99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
  RUN_ERRORS=$(awk '/Non-2xx or 3xx responses:/ {n += $NF}
                    /Socket errors:/ {gsub(/,/, ""); n += $4 + $6 + $8 + $10}
                    END {print n + 0}' "$out")
  if [[ -z $RUN_RPS || -z $RUN_REQS || $RUN_REQS == 0 ]]; then
    echo "$bench_name: wrk produced no result; its output ($out):" >&2
    cat "$out" >&2
    return 1
  fi
}
