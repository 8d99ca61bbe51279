# shellcheck shell=bash
# Debian packages Turnpike needs, and a helper that installs only the missing ones.
#
# Sourced by scripts/run, scripts/test and bench/compare.sh; defines functions and arrays only.
# Debian 12 (bookworm) is the reference system. Installing needs root (or sudo).

# shellcheck disable=SC2034  # the arrays are used by the scripts that source this file

# Everything needed to configure and build the whole tree (daemon, tests, micro-benchmarks),
# plus curl for poking at a running gateway.
TURNPIKE_BUILD_DEPS=(
  build-essential cmake ninja-build pkg-config
  libuv1-dev node-llhttp libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libpcre2-dev libhiredis-dev libc-ares-dev libssl-dev libsimdjson-dev
  curl
)

# Real services the tests start themselves (on loopback, free ports, stopped by PID).
# dnsmasq-base is dnsmasq's binary without the system service (the dns provider's tests run
# their own instance on a free port). python3 runs the fake Nacos server (tests/support/).
TURNPIKE_TEST_DEPS=(redis-server prometheus dnsmasq-base python3)

# Debian starts and enables a service when its package is installed; the tests run their
# own instances, so the system's is stopped and disabled again (no service is left behind).
turnpike_disable_services() {
  local svc
  for svc in "$@"; do
    if command -v systemctl >/dev/null 2>&1 && systemctl list-unit-files "$svc.service" >/dev/null 2>&1; then
      systemctl disable --now "$svc.service" >/dev/null 2>&1 || true
    fi
    if command -v service >/dev/null 2>&1; then
      service "$svc" stop >/dev/null 2>&1 || true
    fi
  done
}

# Extra tools for bench/compare.sh only.
TURNPIKE_BENCH_DEPS=(wrk nginx)

# Prints, one per line, the packages of "$@" that dpkg does not report as installed.
turnpike_missing_packages() {
  local pkg status
  for pkg in "$@"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    if [[ $status != "install ok installed" ]]; then
      printf '%s\n' "$pkg"
    fi
  done
}

# Installs the packages of "$@" that are missing. Does nothing (and touches no package list)
# when all are present; otherwise runs `apt-get update` once, then `apt-get install`.
turnpike_ensure_packages() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "deps: dpkg-query not found; this helper supports Debian/Ubuntu only." >&2
    echo "deps: install these by hand: $*" >&2
    return 1
  fi
  local missing=()
  mapfile -t missing < <(turnpike_missing_packages "$@")
  if ((${#missing[@]} == 0)); then
    echo "deps: all ${#} packages present" >&2
    return 0
  fi
  echo "deps: installing ${missing[*]}" >&2
  local sudo=()
  if ((EUID != 0)); then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "deps: not root and no sudo; install by hand: ${missing[*]}" >&2
      return 1
    fi
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
}
