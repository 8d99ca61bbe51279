#!/usr/bin/env bash
# Prometheus scrapes under paced load (APISIX PR #6315's story): does rendering the metrics
# disturb the requests being served?
#
#   wrk (paced, GET /r/0 ... /r/<ROUTES-1>) -> Turnpike (1 worker, prometheus as a global rule)
#                                                 -> upstream nginx
#   curl every SCRAPE_INTERVAL s -> Turnpike's exporter (plugin_attr.prometheus.export_addr)
#
# Every route gets its own label sets (apisix_http_status, three apisix_http_latency
# histograms, two apisix_bandwidth counters): about 57 series a route, so the default 175 routes
# give ~10k series (the exact count is printed). A warm-up visits every route, then the rounds
# alternate a run without scraping and a run with it; at the end, the medians of request
# p50/p99/p99.9 with and without, their ratio, and the scrapes' duration and size.
#
# Usage: bench/scrape_under_load.sh
# Env:   ROUTES=175          routes, each its own series
#        CONNECTIONS=20      wrk connections;  DELAY_MS=10  pause after each answer, per
#                            connection (rate ~ CONNECTIONS * 1000 / (DELAY_MS + latency))
#        DURATION=20s        each run;  ROUNDS=3  rounds (a run without and one with scraping)
#        SCRAPE_INTERVAL=1   seconds between scrapes
#        TURNPIKE_BIN        gateway binary (default build/release/src/daemon/turnpike)
#        KEEP=0              1 = keep the work directory
# Nothing is pinned: the worker, the control thread (which renders), wrk and the upstream share
# the machine's CPUs, as they would on a small host.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"

routes=${ROUTES:-175}
connections=${CONNECTIONS:-20}
delay_ms=${DELAY_MS:-10}
duration=${DURATION:-20s}
[[ $duration =~ ^[0-9]+$ ]] && duration=${duration}s
rounds=${ROUNDS:-3}
interval=${SCRAPE_INTERVAL:-1}
turnpike_bin=${TURNPIKE_BIN:-$root/build/release/src/daemon/turnpike}
keep=${KEEP:-0}
load_cpus=()
for v in routes connections delay_ms rounds; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "scrape: ${v^^} must be a positive integer" >&2; exit 2; }
done
[[ -x $turnpike_bin ]] || { echo "scrape: no Turnpike binary at $turnpike_bin" >&2; exit 1; }
turnpike_ensure_packages "${TURNPIKE_BENCH_DEPS[@]}" curl

bench_name=scrape
# shellcheck source=bench/lib/loadtest.sh
source "$root/bench/lib/loadtest.sh"
clk_tck=$(getconf CLK_TCK)

start_upstream_nginx
dir=$work/turnpike
mkdir -p "$dir"
free_port
export_port=$REPLY
{
  echo "routes:"
  echo "  - {id: hello, uri: /hello, upstream_id: 1}"
  for ((r = 0; r < routes; r++)); do echo "  - {id: r$r, uri: /r/$r, upstream_id: 1}"; done
  echo "upstreams:"
  echo "  - {id: 1, type: roundrobin, nodes: {\"127.0.0.1:$up_port\": 1}}"
  echo "global_rules:"
  echo "  - {id: metrics, plugins: {prometheus: {}}}"
  echo "#END"
} >"$dir/apisix.yaml"
start_turnpike_process "$dir" "plugin_attr:
  prometheus:
    export_addr: {ip: 127.0.0.1, port: $export_port}"
metrics_url=http://127.0.0.1:$export_port/apisix/prometheus/metrics

# Every route once, so every label set exists before the first measured run.
wrk -t1 -c"$connections" -d2s -s "$root/bench/wrk/paced.lua" "http://127.0.0.1:$TURNPIKE_PORT" \
  -- "$routes" 0 >"$work/warmup.txt" 2>&1
curl -fsS "$metrics_url" -o "$work/metrics.txt"
series=$(grep -vc '^#' "$work/metrics.txt" || true)
echo "scrape: Turnpike (pid $TURNPIKE_PID), $routes routes, $series series," \
  "$(stat -c %s "$work/metrics.txt") bytes a scrape; wrk -c$connections, ${delay_ms} ms after" \
  "each answer, $duration a run, $rounds round(s); a scrape every ${interval} s"

# scraper OUT: scrapes until killed, one "seconds bytes" line a scrape.
scraper() {
  while :; do
    curl -sS -o /dev/null -w '%{time_total} %{size_download}\n' "$metrics_url" >>"$1" || true
    sleep "$interval"
  done
}

declare -A results
row_fmt='%-10s %10s %10s %10s %10s %12s %8s\n'
for ((round = 1; round <= rounds; round++)); do
  modes=(without with)
  ((round % 2 == 0)) && modes=(with without)
  echo
  echo "round $round/$rounds"
  # shellcheck disable=SC2059
  printf "$row_fmt" scraping "req/s" "p50 ms" "p99 ms" "p99.9 ms" "CPU us/req" errors
  for mode in "${modes[@]}"; do
    out=$work/round$round-$mode.txt
    scrape_pid=
    if [[ $mode == with ]]; then
      scraper "$work/scrapes.txt" &
      scrape_pid=$!
      started_pids+=("$scrape_pid")
    fi
    before=$(cpu_ticks "$TURNPIKE_PID")
    wrk -t1 -c"$connections" -d"$duration" --latency -s "$root/bench/wrk/paced.lua" \
      "http://127.0.0.1:$TURNPIKE_PORT" -- "$routes" "$delay_ms" >"$out" 2>&1 &
    wrk_pid=$!
    wait "$wrk_pid" || true
    wrk_pid=
    after=$(cpu_ticks "$TURNPIKE_PID")
    [[ -n $scrape_pid ]] && stop_pid "$scrape_pid"
    parse_wrk "$out" || exit 1
    RUN_P999=$(awk '$1 == "tail" && $2 == "99.9%" {printf "%.3f", $3 / 1000}' "$out")
    cpu=$(awk -v t=$((after - before)) -v hz="$clk_tck" -v n="$RUN_REQS" \
      'BEGIN {printf "%.2f", t / hz * 1e6 / n}')
    for m in RUN_RPS RUN_P50 RUN_P99 RUN_P999; do results["$mode $m"]+="${!m} "; done
    # shellcheck disable=SC2059
    printf "$row_fmt" "$mode" "$RUN_RPS" "$RUN_P50" "$RUN_P99" "$RUN_P999" "$cpu" "$RUN_ERRORS"
  done
done

echo
echo "median of $rounds round(s)"
printf '%-10s %10s %10s %10s %10s\n' scraping "req/s" "p50 ms" "p99 ms" "p99.9 ms"
declare -A med
for mode in without with; do
  for m in RUN_RPS RUN_P50 RUN_P99 RUN_P999; do
    read -r -a vals <<<"${results["$mode $m"]}"
    med["$mode $m"]=$(median "${vals[@]}")
  done
  printf '%-10s %10s %10s %10s %10s\n' "$mode" "${med["$mode RUN_RPS"]}" \
    "${med["$mode RUN_P50"]}" "${med["$mode RUN_P99"]}" "${med["$mode RUN_P999"]}"
done
awk -v a="${med["with RUN_P99"]}" -v b="${med["without RUN_P99"]}" \
  -v c="${med["with RUN_P999"]}" -v d="${med["without RUN_P999"]}" 'BEGIN {
    printf "with/without scraping: p99 %.3fx  p99.9 %.3fx\n", (b > 0 ? a / b : 0), (d > 0 ? c / d : 0) }'
if [[ -s $work/scrapes.txt ]]; then
  sort -g "$work/scrapes.txt" | awk '{t[NR] = $1 * 1000; s += $2} END {
    printf "scrapes: %d, duration p50 %.1f ms, max %.1f ms, %.0f bytes on average\n",
      NR, t[int((NR + 1) / 2)], t[NR], s / NR }'
fi
