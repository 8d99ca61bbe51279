// limit-count with sync_interval against the plain redis policy, per request on the worker:
//   BM_SyncDecide: the delayed-sync decision of a key whose quota is known (SyncTable:
//     fingerprint, one shard lock), at 1, 4,096 and 1,048,576 keys, on 1 and 2 threads;
//   BM_RedisPolicyCall: what the redis policy costs instead, one script call through
//     RedisLink to a real redis-server on loopback, 64 requests' calls pipelined at a time
//     (the wall time per call on the worker's loop, Redis's work included, as a request waits
//     for it). Skipped when redis-server is not installed.
// The flush adds one such call per key and interval, shared by every request of the key.
#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "plugins/limit_count/delayed_sync.h"
#include "plugins/limit_count/redis_link.h"

extern char** environ;

namespace turnpike::plugins::limit_count {
namespace {

constexpr std::string_view kPrefix = "/apisix/routes/1:3861285937:";
constexpr int64_t kWindowMs = 60'000;

const std::vector<std::string>& Keys(size_t n) {
  static std::unordered_map<size_t, std::vector<std::string>> cache;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::vector<std::string>& keys = cache[n];
  if (keys.empty()) {
    for (size_t i = 0; i < n; ++i) keys.push_back("10.0." + std::to_string(i) + ".7");
  }
  return keys;
}

// The daemon's default table for up to 4,096 keys, twice the keys beyond; every key's quota
// known (as after its first request), with room for every request of the run.
SyncTable& Table(size_t n) {
  static std::unordered_map<size_t, std::unique_ptr<SyncTable>> tables;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<SyncTable>& t = tables[n];
  if (t == nullptr) {
    t = std::make_unique<SyncTable>(std::max<size_t>(262144, 2 * n));
    for (const std::string& key : Keys(n)) {
      CounterKey k = Fingerprint(kPrefix, key);
      t->Decide(k, 1, 1, kWindowMs, 0);
      t->Settle(k, 0, true, 1, 1'000'000'000, 0);
    }
  }
  return *t;
}

void BM_SyncDecide(benchmark::State& state) {
  const std::vector<std::string>& keys = Keys(static_cast<size_t>(state.range(0)));
  SyncTable& table = Table(keys.size());
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  for (auto _ : state) {
    const std::string& key = keys[i % keys.size()];
    i += 104729;  // scattered
    SyncTable::Decision d =
        table.Decide(Fingerprint(kPrefix, key), uint64_t{1} << 52, 1, kWindowMs, 1000);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_SyncDecide)->Arg(1)->Arg(4096)->Arg(1048576)->Threads(1)->Threads(2);

// A redis-server of the bench's own on a free loopback port, killed at exit.
class Server {
 public:
  Server() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
    close(fd);
    std::string port = std::to_string(port_);
    std::vector<std::string> args = {"redis-server", "--port",     port,     "--bind",
                                     "127.0.0.1",    "--save",     "",       "--appendonly",
                                     "no",           "--loglevel", "warning"};
    std::vector<char*> argv;
    for (std::string& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    if (posix_spawnp(&pid_, "redis-server", nullptr, nullptr, argv.data(), environ) != 0) {
      pid_ = 0;
      return;
    }
    for (int i = 0; i < 100; ++i) {  // until it answers
      redisContext* c = redisConnect("127.0.0.1", port_);
      bool up = c != nullptr && c->err == 0;
      if (c != nullptr) redisFree(c);
      if (up) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~Server() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return pid_ > 0; }
  int port() const { return port_; }

 private:
  int port_ = 0;
  pid_t pid_ = 0;
};

struct Counter final : RedisLink::Waiter {
  void OnRedisReply(const redisReply* reply, std::string_view, uint64_t) override {
    ok += reply != nullptr;
    --pending;
  }
  int pending = 0;
  int ok = 0;
};

void BM_RedisPolicyCall(benchmark::State& state) {
  Server server;
  if (!server.ok()) {
    state.SkipWithError("redis-server is not installed");
    return;
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    RedisConfig config;
    config.host = "127.0.0.1";
    config.port = server.port();
    RedisLink link(&loop, config);
    Counter counter;
    const std::vector<std::string>& keys = Keys(4096);
    std::string key;
    size_t i = 0;
    constexpr int kDepth = 64;
    for (auto _ : state) {
      for (int n = 0; n < kDepth; ++n) {
        key.assign("plugin-limit-count:v1:");
        key.append(kPrefix);
        key.append(keys[i++ % keys.size()]);
        ++counter.pending;
        link.IncrementFixed(key, 60, 1, &counter, 0);
      }
      while (counter.pending > 0) uv_run(&loop, UV_RUN_ONCE);
    }
    state.SetItemsProcessed(state.iterations() * kDepth);
    if (counter.ok == 0) state.SkipWithError("no answer from redis-server");
  }
  uv_run(&loop, UV_RUN_NOWAIT);
  uv_loop_close(&loop);
}
BENCHMARK(BM_RedisPolicyCall)->UseRealTime();

}  // namespace
}  // namespace turnpike::plugins::limit_count

BENCHMARK_MAIN();
