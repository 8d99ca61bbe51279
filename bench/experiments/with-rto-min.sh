#!/usr/bin/env bash
# with-rto-min.sh MICROSECONDS COMMAND...: runs COMMAND with the machine's minimum TCP RTO
# (net.ipv4.tcp_rto_min_us, Linux 6.11+, root) set to MICROSECONDS, and puts the old value back
# when COMMAND ends, fails or is interrupted. For node churn's "is it TCP's handling of a
# connection idle past its RTO?" (docs/benchmarks.md, 2026-12-06), e.g.
#   bench/experiments/with-rto-min.sh 2000000 env PAUSE_DAMON=1 FAKE_CPUS=0 ROUNDS=40 bench/node_churn.sh
set -euo pipefail
knob=/proc/sys/net/ipv4/tcp_rto_min_us
if (($# < 2)) || ! [[ $1 =~ ^[0-9]+$ ]]; then
  echo "usage: $0 MICROSECONDS COMMAND..." >&2
  exit 2
fi
[[ -w $knob ]] || { echo "$0: $knob is not writable (root, Linux 6.11+)" >&2; exit 1; }
old=$(<"$knob")
trap 'echo "$old" >"$knob"' EXIT
echo "$1" >"$knob"
echo "tcp_rto_min_us: $(<"$knob") (was $old)"
shift
"$@"
