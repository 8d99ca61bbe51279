#!/usr/bin/env bash
# Instructions per proxied request, from callgrind: stable on a noisy machine, unlike time.
#
# Runs Turnpike (1 worker) under `valgrind --tool=callgrind` in front of the test backend
# twice, once for N and once for 3N keep-alive GET /hello requests on one connection, and
# prints (I(3N) - I(N)) / 2N: start-up, the readiness probe and shutdown cancel out. Counts
# every thread of the process (user space only).
#
# Usage: bench/callgrind.sh [N]          (default 2000)
# Env:   TURNPIKE_BIN   default build/release/src/daemon/turnpike
#        BACKEND_BIN    default: turnpike_test_backend next to it (build/release/tests/)
#        ROUTES_EXTRA   extra YAML under the route (e.g. a plugins: map), indented 4 spaces
#        PLUGINS_YAML   a file with the route's `plugins:` map (as bench/compare.sh takes it),
#                       e.g. bench/chain.yaml: limit-count + proxy-rewrite + prometheus
#        KEYS=0         > 0: requests carry `X-Client: client-<i mod KEYS>` (1: a stable
#                       rate-limit key; 4096: rotating keys, as APISIX PR #14141); 0: no such
#                       header (the plain 4-header GET the earlier figures were taken with)
#        KEEP=1         keep the callgrind outputs and print where (bench/cg_report.py DIR:
#                       per-request cost of each function or line; callgrind_annotate)
#        PROXY=nginx    measure nginx instead (one process: master_process off), as the plain
#                       proxy of bench/compare.sh (keep-alive upstream, the forwarding headers
#                       APISIX sets): the reference for Turnpike's counts on this machine
#        NODES=1        nodes of the upstream, all the backend's address (round robin over
#                       NODES entries: the picker's cost at that size, one pooled connection)
#        CALLGRIND_ARGS more valgrind options, e.g. "--branch-sim=yes --cache-sim=yes": the
#                       simulated branch mispredictions and cache misses per request are printed
#                       too (events Bcm/Bim, D1mr/D1mw/LLd*), a hint where instructions alone mislead
#        DISCOVERY=     nacos: the nodes come from the fake Nacos (tests/support/fake_nacos.py)
#                       polled every FETCH_INTERVAL=1 s instead of apisix.yaml (APISIX PR
#                       #12258's story); the polls made while the extra requests run count too
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=${1:-2000}
turnpike_bin=${TURNPIKE_BIN:-$root/build/release/src/daemon/turnpike}
backend_bin=${BACKEND_BIN:-$(dirname "$(dirname "$(dirname "$turnpike_bin")")")/tests/turnpike_test_backend}
for b in "$turnpike_bin" "$backend_bin"; do
  [[ -x $b ]] || { echo "callgrind: no binary at $b (build with -DCMAKE_BUILD_TYPE=Release)" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "callgrind: valgrind is not installed" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/turnpike-callgrind.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  if [[ ${KEEP:-0} == 1 ]]; then echo "callgrind: outputs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

: >"$work/backend.out"  # exists before the loop below reads it (the job opens it later)
"$backend_bin" --listen 127.0.0.1:0 >"$work/backend.out" 2>&1 &
pids+=($!)
for ((i = 0; i < 100; i++)); do
  backend_port=$(awk '/^LISTENING/ {print $2}' "$work/backend.out")
  [[ -n $backend_port ]] && break
  sleep 0.1
done
[[ -n ${backend_port:-} ]] || { echo "callgrind: backend did not start" >&2; exit 1; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/config.yaml" <<EOF
apisix:
  node_listen: [{ip: 127.0.0.1, port: $port}]
  enable_ipv6: false
deployment:
  role: data_plane
  role_data_plane: {config_provider: yaml}
nginx_config:
  worker_processes: 1
  error_log_level: warn
EOF
plugins=
if [[ -n ${PLUGINS_YAML:-} ]]; then
  [[ -f $PLUGINS_YAML ]] || { echo "callgrind: PLUGINS_YAML: no file $PLUGINS_YAML" >&2; exit 2; }
  plugins=$'    plugins:\n'$(sed 's/^/      /' "$PLUGINS_YAML")
fi
keys=${KEYS:-0}
[[ $keys =~ ^[0-9]+$ ]] || { echo "callgrind: KEYS must be a whole number" >&2; exit 2; }
nodes=${NODES:-1}
[[ $nodes =~ ^[1-9][0-9]*$ ]] || { echo "callgrind: NODES must be >= 1" >&2; exit 2; }
upstream=$'      nodes:\n'
if [[ ${DISCOVERY:-} == nacos ]]; then
  # The fake Nacos answers the same NODES instances to every poll.
  : >"$work/nacos.out"
  python3 "$root/tests/support/fake_nacos.py" --port 0 >"$work/nacos.out" 2>&1 &
  pids+=($!)
  for ((i = 0; i < 100; i++)); do
    nacos_port=$(awk '/^LISTENING/ {print $2}' "$work/nacos.out")
    [[ -n $nacos_port ]] && break
    sleep 0.1
  done
  [[ -n ${nacos_port:-} ]] || { echo "callgrind: fake nacos did not start" >&2; exit 1; }
  python3 -c 'import json, sys; print(json.dumps([{"ip": "127.0.0.1", "port": int(sys.argv[1]),
    "weight": 1.0}] * int(sys.argv[2])))' "$backend_port" "$nodes" |
    curl -fsS -X POST --data-binary @- \
      "http://127.0.0.1:$nacos_port/fake/instances?serviceName=bench" >/dev/null
  printf 'discovery:\n  nacos:\n    host: ["http://127.0.0.1:%s"]\n    fetch_interval: %s\n' \
    "$nacos_port" "${FETCH_INTERVAL:-1}" >>"$work/config.yaml"
  upstream=$'      discovery_type: nacos\n      service_name: bench\n'
elif [[ -n ${DISCOVERY:-} ]]; then
  echo "callgrind: DISCOVERY must be nacos" >&2
  exit 2
else
  for ((i = 0; i < nodes; i++)); do
    upstream+="        - {host: 127.0.0.1, port: $backend_port, weight: 1}"$'\n'
  done
fi
cat >"$work/apisix.yaml" <<EOF
routes:
  - id: hello
    uri: /hello
${ROUTES_EXTRA:-}
$plugins
    upstream:
$upstream#END
EOF

# requests COUNT: COUNT sequential keep-alive requests on one connection.
requests() {
  python3 - "$port" "$1" "$keys" <<'PY'
import socket, sys, time
port, count, keys = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
deadline = time.time() + 60
while True:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        break
    except OSError:
        if time.time() > deadline:
            sys.exit("callgrind: turnpike did not accept connections")
        time.sleep(0.2)
head = b"GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: callgrind\r\nAccept: */*\r\n"
# Discovered nodes arrive after start-up: wait for a first answer (the same in both runs).
while True:
    probe = socket.create_connection(("127.0.0.1", port), timeout=30)
    probe.sendall(b"GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    answer = b""
    while True:
        chunk = probe.recv(65536)
        if not chunk:
            break
        answer += chunk
    probe.close()
    if answer.startswith(b"HTTP/1.1 200"):
        break
    if time.time() > deadline:
        sys.exit("callgrind: /hello did not answer 200")
    time.sleep(0.2)
reqs = [head + b"X-Client: client-%d\r\n\r\n" % k for k in range(keys)] or [head + b"\r\n"]
for i in range(count):
    s.sendall(reqs[i % len(reqs)])
    buf = b""
    while not buf.endswith(b"hello world\n"):
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("callgrind: connection closed early")
        buf += chunk
s.close()
PY
}

# shellcheck source=bench/lib/nginx_proxy.sh
source "$root/bench/lib/nginx_proxy.sh"
proxy=${PROXY:-turnpike}
case $proxy in
  turnpike) proxy_cmd=("$turnpike_bin" -c "$work/config.yaml") ;;
  nginx)
    command -v nginx >/dev/null || { echo "callgrind: nginx is not installed" >&2; exit 1; }
    mkdir -p "$work/nginx"
    cat >"$work/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
master_process off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    keepalive_requests 1000000;
$(nginx_proxy_upstream_server "$backend_port" 32 "127.0.0.1:$port")
}
EOF
    proxy_cmd=(nginx -p "$work/nginx/" -c "$work/nginx/nginx.conf")
    ;;
  *) echo "callgrind: PROXY must be turnpike or nginx" >&2; exit 2 ;;
esac

# instructions COUNT: total Ir of a proxy run serving COUNT requests.
instructions() {
  local out=$work/callgrind.$1 pid
  # shellcheck disable=SC2086 # CALLGRIND_ARGS is a list of options
  valgrind --tool=callgrind ${CALLGRIND_ARGS:-} --callgrind-out-file="$out" "${proxy_cmd[@]}" \
    >"$work/$proxy.$1.log" 2>&1 &
  pid=$!
  requests "$1"
  kill -TERM "$pid"
  wait "$pid" || true
  awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

i1=$(instructions "$n")
i3=$(instructions $((3 * n)))
awk -v a="$i1" -v b="$i3" -v n="$n" 'BEGIN {
  printf "callgrind: %d requests %d Ir, %d requests %d Ir: %.0f instructions per request\n",
    n, a, 3 * n, b, (b - a) / (2 * n) }'
if [[ -n ${CALLGRIND_ARGS:-} ]]; then
  # Every event of the summary line, per request, as the instructions above.
  awk -v n="$n" '
    FNR == 1 { f++ }
    /^events:/ { for (i = 2; i <= NF; i++) name[i] = $i }
    /^(summary|totals):/ { for (i = 2; i <= NF; i++) v[f, i] = $i; k = NF }
    END { line = "callgrind: per request:"
          for (i = 2; i <= k; i++) line = line sprintf(" %s %.1f", name[i], (v[2, i] - v[1, i]) / (2 * n))
          print line }' "$work/callgrind.$n" "$work/callgrind.$((3 * n))"
fi
