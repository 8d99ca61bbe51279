// fake_kube_churn: the FAKE Kubernetes API server of tests/support (fake_kube_apiserver.h)
// serving one service's EndpointSlices whose endpoints change on a timer, for
// bench/node_churn.sh (a real API server cannot be installed here).
//
// The backend addresses (IPv4, one a line in --ips) are cut into blocks of --slice addresses.
// The service `<--namespace>/<--service>` starts with --nodes addresses: the first
// nodes/slice blocks, one EndpointSlice each (<service>-<i>, port "http" = --port, every
// endpoint ready). The remaining blocks are spares. Every --interval-ms (0: never), one slice
// in turn takes the spare block that has waited longest, and its block becomes a spare: a
// MODIFIED event on the watch stream, --slice endpoints out and as many in, the set's size
// unchanged. Every address of the file stays a live backend, so a request to any address
// the set ever held must succeed. With --same 1 the slice is re-sent with its own endpoints
// (a MODIFIED event that changes nothing): the watch, the parse and the compare still run on
// the gateway, but no new node set follows (what the changes themselves cost, by difference).
//
// SIGUSR1 pauses the changes, SIGUSR2 resumes them (the first change one interval later);
// --paused 1 starts paused. With --warm-all 1 the service starts with every address of the file
// (the spare blocks as more slices, <service>-<i> after the others), and the first SIGUSR1 deletes
// those slices: the set is then the first --nodes addresses, as without the option, in a gateway
// that has connected to every address (bench/node_churn.sh SPARES_WARM=1). With --restore 1
// each pause puts every slice back on its first block (one event per slice that moved), so a
// paused set is again the first --nodes addresses, in a gateway that churned (HISTORY=1
// RESTORE=1: the history without the set it left). Prints "LISTENING <port>" once serving,
// then "STEP <n>" after each change; SIGINT or SIGTERM stops it. The history is compacted every 100 changes (open watches go
// on; a new watch from an older version gets 410, as from a real API server).
//
// Usage: fake_kube_churn --ips FILE --nodes N --slice S --port P [--interval-ms MS]
//                        [--same 0|1] [--paused 0|1] [--warm-all 0|1] [--restore 0|1]
//                        [--namespace default]
//                        [--service churn] [--token churn]
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/fake_kube_apiserver.h"

namespace {

using turnpike::testing::FakeKubeApiServer;

std::atomic<bool> g_stop{false};
std::atomic<bool> g_paused{false};

void OnSignal(int) { g_stop = true; }
void OnPause(int) { g_paused = true; }
void OnResume(int) { g_paused = false; }

[[noreturn]] void Usage(const char* why) {
  std::fprintf(
      stderr,
      "fake_kube_churn: %s\nusage: fake_kube_churn --ips FILE --nodes N --slice S "
      "--port P [--interval-ms MS] [--same 0|1] [--paused 0|1] [--warm-all 0|1] [--restore 0|1] "
      "[--namespace NS] [--service NAME] [--token T]\n",
      why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string ips_file, ns = "default", service = "churn", token = "churn";
  long nodes = 0, slice = 0, port = 0, interval_ms = 0, same = 0, paused = 0, warm_all = 0;
  long restore = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) Usage(("missing value for " + arg).c_str());
    std::string value = argv[++i];
    if (arg == "--ips") {
      ips_file = value;
    } else if (arg == "--namespace") {
      ns = value;
    } else if (arg == "--service") {
      service = value;
    } else if (arg == "--token") {
      token = value;
    } else {
      char* end = nullptr;
      long n = std::strtol(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || n < 0) Usage(("bad number for " + arg).c_str());
      if (arg == "--nodes") {
        nodes = n;
      } else if (arg == "--slice") {
        slice = n;
      } else if (arg == "--port") {
        port = n;
      } else if (arg == "--interval-ms") {
        interval_ms = n;
      } else if (arg == "--same") {
        same = n;
      } else if (arg == "--paused") {
        paused = n;
      } else if (arg == "--restore") {
        restore = n;
      } else if (arg == "--warm-all") {
        warm_all = n;
      } else {
        Usage(("unknown option " + arg).c_str());
      }
    }
  }
  std::vector<std::string> ips;
  {
    std::ifstream in(ips_file);
    if (!in) Usage("cannot read --ips");
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) ips.push_back(line);
    }
  }
  if (slice <= 0 || nodes <= 0 || nodes % slice != 0)
    Usage("--nodes must be a multiple of --slice");
  if (port <= 0 || port > 65535) Usage("--port must be 1..65535");
  const size_t blocks = ips.size() / size_t(slice);
  const size_t slices = size_t(nodes / slice);
  if (interval_ms > 0 ? blocks <= slices : blocks < slices) {
    Usage("--ips holds too few addresses (nodes, plus one spare block of --slice to churn)");
  }

  FakeKubeApiServer::Options options;
  options.token = token;
  FakeKubeApiServer api(options);
  if (!api.Start()) {
    std::fprintf(stderr, "fake_kube_churn: cannot listen\n");
    return 1;
  }
  auto make_slice = [&](size_t index, size_t block) {
    std::vector<FakeKubeApiServer::SliceEndpoint> endpoints;
    for (size_t i = block * size_t(slice); i < (block + 1) * size_t(slice); ++i) {
      endpoints.push_back({ips[i], true});
    }
    return FakeKubeApiServer::EndpointSlice(ns, service + "-" + std::to_string(index), service,
                                            endpoints, {{"http", int(port)}});
  };
  std::vector<size_t> block_of(slices);
  for (size_t i = 0; i < slices; ++i) {
    block_of[i] = i;
    api.Apply(FakeKubeApiServer::Kind::kEndpointSlices, make_slice(i, i));
  }
  std::deque<size_t> spare;  // the blocks that wait, longest first
  auto reset_spares = [&] {
    spare.clear();
    for (size_t b = slices; b < blocks; ++b) spare.push_back(b);
  };
  reset_spares();
  if (warm_all != 0) {
    if (interval_ms != 0) Usage("--warm-all is for a set that does not churn (--interval-ms 0)");
    for (size_t b = slices; b < blocks; ++b) {
      api.Apply(FakeKubeApiServer::Kind::kEndpointSlices, make_slice(b, b));
    }
  }
  api.Compact();

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  struct sigaction pause_sa {};
  pause_sa.sa_handler = OnPause;
  sigaction(SIGUSR1, &pause_sa, nullptr);
  struct sigaction resume_sa {};
  resume_sa.sa_handler = OnResume;
  sigaction(SIGUSR2, &resume_sa, nullptr);
  g_paused = paused != 0;
  std::printf("LISTENING %d\n", api.port());
  std::fflush(stdout);

  auto next = std::chrono::steady_clock::now();
  bool warm_dropped = false;
  bool was_paused = false;
  for (uint64_t step = 0; !g_stop;) {
    bool pause_began = g_paused && !was_paused;
    was_paused = g_paused;
    if (warm_all != 0 && pause_began && !warm_dropped) {
      for (size_t b = slices; b < blocks; ++b) {
        api.Delete(FakeKubeApiServer::Kind::kEndpointSlices, ns, service + "-" + std::to_string(b));
      }
      warm_dropped = true;
      std::printf("DROPPED %zu\n", blocks - slices);
      std::fflush(stdout);
    }
    if (restore != 0 && pause_began) {
      size_t changed = 0;
      for (size_t i = 0; i < slices; ++i) {
        if (block_of[i] == i) continue;
        block_of[i] = i;
        api.Apply(FakeKubeApiServer::Kind::kEndpointSlices, make_slice(i, i));
        ++changed;
      }
      reset_spares();
      std::printf("RESTORED %zu\n", changed);
      std::fflush(stdout);
    }
    if (interval_ms == 0 || g_paused) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      next = std::chrono::steady_clock::now();  // a resumed churn starts one interval later
      continue;
    }
    next += std::chrono::milliseconds(interval_ms);
    std::this_thread::sleep_until(next);
    if (g_stop) break;
    size_t index = step % slices;
    if (same == 0) {
      spare.push_back(block_of[index]);
      block_of[index] = spare.front();
      spare.pop_front();
    }
    api.Apply(FakeKubeApiServer::Kind::kEndpointSlices, make_slice(index, block_of[index]));
    ++step;
    if (step % 100 == 0) api.Compact();
    std::printf("STEP %llu\n", static_cast<unsigned long long>(step));
    std::fflush(stdout);
  }
  api.Stop();
  return 0;
}
