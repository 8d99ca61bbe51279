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
//
// window_type sliding (BM_SlidingCalls): the sliding window's check-and-increment, as
// one script call with both counters (what the link does on one server), beside APISIX's
// way on the same server, a GET of the previous window's counter and then the script
// with its value (two round trips one after the other: what the cluster link must do),
// and through the cluster link. The limit is never reached, so every call increments.
#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>
#include <uv.h>

#include <cstdint>
#include <cstdlib>
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

enum class Mode {
  kFixed,            // the fixed window's script
  kSliding,          // the sliding window's, through the store (one call on one server)
  kSlidingTwoTrips,  // on a RedisLink: GET of the previous counter, then the script
};

// Keeps `depth` calls in flight until `total` have been answered.
class Driver final : public RedisStore::Waiter {
 public:
  Driver(RedisStore &link, const std::vector<std::string> &keys, Mode mode = Mode::kFixed)
      : link_(link), keys_(keys), mode_(mode) {}

  // Runs the loop until every call is answered; false if any failed.
  bool Run(uv_loop_t *loop, int64_t total, int depth) {
    loop_ = loop;
    total_ = total;
    sent_ = answered_ = failed_ = 0;
    for (int i = 0; i < depth && sent_ < total_; ++i) SendOne();
    while (answered_ < total_) uv_run(loop, UV_RUN_ONCE);
    return failed_ == 0;
  }

  void OnRedisReply(const redisReply *reply, std::string_view /*error*/,
                    uint64_t token) override {
    if (token != 0 && reply != nullptr) {  // two trips: the GET came, the script goes
      const std::string &key = keys_[token - 1];
      int64_t previous = reply->type == REDIS_REPLY_STRING ? std::atoll(reply->str) : 0;
      static_cast<RedisLink &>(link_).IncrementSlidingBy(Call(key), previous, this, 0, 0, false);
      return;
    }
    ++answered_;
    if (reply == nullptr) ++failed_;
    if (sent_ < total_) SendOne();
  }

 private:
  // The key's counters for windows 1000 and 999 (any two: the work is the same).
  RedisStore::SlidingCall Call(const std::string &key) {
    return {key, key + ".previous", 60, 30'000, uint64_t{1} << 40, 1};
  }
  void SendOne() {
    size_t i = static_cast<size_t>(sent_++) % keys_.size();
    const std::string &key = keys_[i];
    switch (mode_) {
      case Mode::kFixed:
        link_.IncrementFixed(key, 60, 1, this, 0);
        break;
      case Mode::kSliding:
        link_.IncrementSliding(Call(key), this, 0);
        break;
      case Mode::kSlidingTwoTrips:
        static_cast<RedisLink &>(link_).Query({"GET", key + ".previous"}, this, i + 1,
                                              static_cast<int64_t>(uv_now(loop_)) + 1000);
        break;
    }
  }

  RedisStore &link_;
  const std::vector<std::string> &keys_;
  Mode mode_;
  uv_loop_t *loop_ = nullptr;
  int64_t total_ = 0;
  int64_t sent_ = 0;
  int64_t answered_ = 0;
  int64_t failed_ = 0;
};

// Warms `link` and measures batches of 4,096 calls with `depth` in flight.
void Measure(benchmark::State &state, RedisStore &link, uv_loop_t *loop, int depth,
             Mode mode = Mode::kFixed) {
  std::vector<std::string> keys;
  for (int i = 0; i < 4096; ++i) {
    keys.push_back("plugin-limit-count:v1:/apisix/routes/bench:1:client-" + std::to_string(i));
  }
  Driver driver(link, keys, mode);
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

// Sliding windows: arg 0 the calls in flight; arg 1 0 = one script call on one server,
// 1 = GET then script on one server (APISIX's two trips), 2 = through a ClusterLink.
void BM_SlidingCalls(benchmark::State &state) {
  const int depth = static_cast<int>(state.range(0));
  const int64_t how = state.range(1);
  turnpike::testing::RedisServer redis;
  turnpike::testing::RedisCluster cluster;
  bool up = turnpike::testing::RedisServer::Available() &&
            (how == 2 ? cluster.Start() : redis.Start());
  if (!up) {
    state.SkipWithError("no redis-server or cluster");
    return;
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    RedisConfig config;
    if (how == 2) {
      config.cluster_nodes = {{"127.0.0.1", cluster.port(0)}};
      ClusterLink link(&loop, config);
      Measure(state, link, &loop, depth, Mode::kSliding);
    } else {
      config.host = "127.0.0.1";
      config.port = redis.port();
      RedisLink link(&loop, config);
      Measure(state, link, &loop, depth, how == 0 ? Mode::kSliding : Mode::kSlidingTwoTrips);
    }
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
}
BENCHMARK(BM_SlidingCalls)
    ->ArgNames({"in_flight", "how"})
    ->ArgsProduct({{1, 64}, {0, 1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
