// limit-count's `redis` policy: script calls per second through one worker's
// RedisLink against a real redis-server (started here on a free loopback port),
// with D calls kept in flight on the one connection. D = 1 is the baseline: one
// call in flight per connection, as a client that waits for each answer before
// it sends the next (APISIX's cosocket per request). D > 1 is what the link
// does under load: every request's call is pipelined on the same connection as
// it comes, and answers come back in order.
//
// Each call is limit-count's fixed-window script on its own key (EVALSHA; 4,096
// keys in turn), so Redis does the same work per call whatever D is.
//
// `redis-cluster`: the same calls through one worker's ClusterLink against a real
// three-master Redis Cluster (the keys spread over the masters by hash slot, one
// connection per master), beside the single server above.
#include <benchmark/benchmark.h>
#include <uv.h>

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/limit_count/cluster_link.h"
#include "plugins/limit_count/redis_link.h"
#include "support/redis.h"
#include "support/redis_cluster.h"

namespace {

using turnpike::plugins::limit_count::ClusterLink;
using turnpike::plugins::limit_count::RedisConfig;
using turnpike::plugins::limit_count::RedisLink;
using turnpike::plugins::limit_count::RedisStore;

// Keeps `depth` calls in flight until `total` have been answered.
class Driver final : public RedisStore::Waiter {
 public:
  Driver(RedisStore &link, const std::vector<std::string> &keys) : link_(link), keys_(keys) {}

  // Runs the loop until every call is answered; false if any failed.
  bool Run(uv_loop_t *loop, int64_t total, int depth) {
    total_ = total;
    sent_ = answered_ = failed_ = 0;
    for (int i = 0; i < depth && sent_ < total_; ++i) SendOne();
    while (answered_ < total_) uv_run(loop, UV_RUN_ONCE);
    return failed_ == 0;
  }

  void OnRedisReply(const redisReply *reply, std::string_view /*error*/,
                    uint64_t /*token*/) override {
    ++answered_;
    if (reply == nullptr) ++failed_;
    if (sent_ < total_) SendOne();
  }

 private:
  void SendOne() {
    const std::string &key = keys_[static_cast<size_t>(sent_++) % keys_.size()];
    link_.IncrementFixed(key, 60, 1, this, 0);
  }

  RedisStore &link_;
  const std::vector<std::string> &keys_;
  int64_t total_ = 0;
  int64_t sent_ = 0;
  int64_t answered_ = 0;
  int64_t failed_ = 0;
};

// Warms `link` and measures batches of 4,096 calls with `depth` in flight.
void Measure(benchmark::State &state, RedisStore &link, uv_loop_t *loop, int depth) {
  std::vector<std::string> keys;
  for (int i = 0; i < 4096; ++i) {
    keys.push_back("plugin-limit-count:v1:/apisix/routes/bench:1:client-" + std::to_string(i));
  }
  Driver driver(link, keys);
  // Connects, loads the script and warms every key.
  if (!driver.Run(loop, 4096, 64)) state.SkipWithError("redis calls failed while warming");
  constexpr int64_t kBatch = 4096;
  for (auto _ : state) {
    if (!driver.Run(loop, kBatch, depth)) {
      state.SkipWithError("redis calls failed");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void BM_RedisLinkCalls(benchmark::State &state) {
  const int depth = static_cast<int>(state.range(0));
  turnpike::testing::RedisServer redis;
  if (!turnpike::testing::RedisServer::Available() || !redis.Start()) {
    state.SkipWithError(("no redis-server: " + redis.error()).c_str());
    return;
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    RedisConfig config;
    config.host = "127.0.0.1";
    config.port = redis.port();
    RedisLink link(&loop, config);
    Measure(state, link, &loop, depth);
  }
  // The link's handles close on the loop.
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
}
BENCHMARK(BM_RedisLinkCalls)
    ->ArgName("in_flight")
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->Arg(256)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_ClusterLinkCalls(benchmark::State &state) {
  const int depth = static_cast<int>(state.range(0));
  turnpike::testing::RedisCluster cluster;
  if (!turnpike::testing::RedisServer::Available() || !cluster.Start()) {
    state.SkipWithError(("no redis cluster: " + cluster.error()).c_str());
    return;
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    RedisConfig config;
    config.cluster_nodes = {{"127.0.0.1", cluster.port(0)}};
    ClusterLink link(&loop, config);
    Measure(state, link, &loop, depth);
    // Redirects followed (the first calls, before the slot map is known) and maps learnt.
    state.counters["moved"] = static_cast<double>(link.moved());
    state.counters["maps"] = static_cast<double>(link.refreshes());
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
}
BENCHMARK(BM_ClusterLinkCalls)
    ->ArgName("in_flight")
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->Arg(256)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
