#include "plugins/limit_count/limit_count.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "plugins/fake_plugin_context.h"
#include "support/fake_factory_context.h"

namespace turnpike::plugins::limit_count {
namespace {

using testing::FakePluginContext;
using turnpike::testing::FakeFactoryContext;

class LimitCountTest : public ::testing::Test {
 protected:
  std::shared_ptr<const LimitCountPlugin> Make(const std::string& json) {
    StatusOr<PluginConstSharedPtr> p = factory_.Create(nlohmann::json::parse(json), fctx_);
    EXPECT_TRUE(p.ok()) << json << ": " << p.status().message();
    return p.ok() ? std::static_pointer_cast<const LimitCountPlugin>(p.value()) : nullptr;
  }
  std::string Error(const std::string& json) {
    StatusOr<PluginConstSharedPtr> p = factory_.Create(nlohmann::json::parse(json), fctx_);
    EXPECT_FALSE(p.ok()) << json;
    return p.ok() ? "" : p.status().message();
  }
  // One request from `ctx`: its status (0 when let through).
  static int Run(const LimitCountPlugin& p, FakePluginContext& ctx) {
    ctx.NextRequest();
    PhaseResult r = p.Access(ctx);
    return r == PhaseResult::kRespond ? ctx.respond_status : 0;
  }
  static std::string H(FakePluginContext& ctx, std::string_view name) {
    return std::string(ctx.ResponseHeader(name).value_or("<none>"));
  }

  LimitCountFactory factory_;
  FakeFactoryContext fctx_;
};

TEST_F(LimitCountTest, ValidatesLikeApisix) {
  EXPECT_EQ(Error("{}"), "value should match only one schema, but matches none");
  EXPECT_EQ(Error(R"({"count": 1})"), "value should match only one schema, but matches none");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 1, "rules": []})"),
            "value should match only one schema, but matches both schemas 1 and 2");
  EXPECT_EQ(Error(R"({"count": 0, "time_window": 60})"),
            "property \"count\" validation failed: expected 0 to be greater than 0");
  EXPECT_EQ(Error(R"({"count": 1.5, "time_window": 60})"),
            "property \"count\" validation failed: object matches none of the required");
  EXPECT_EQ(Error(R"({"count": "abc", "time_window": 60})"),
            "property \"count\" validation failed: resolved value is not a positive integer: abc");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "rejected_code": 600})"),
            "property \"rejected_code\" validation failed: expected 600 to be at most 599");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "rejected_msg": ""})"),
            "property \"rejected_msg\" validation failed: string too short, expected at least 1, "
            "got 0");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "key_type": "header"})"),
            "property \"key_type\" validation failed: matches none of the enum values");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "memcached"})"),
            "property \"policy\" validation failed: matches none of the enum values");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis"})"),
            "then clause did not match: property \"redis_host\" is required");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis", "redis_host": "h",
                      "redis_port": 0})"),
            "property \"redis_host\" validation failed: string too short, expected at least 2, "
            "got 1");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis", "redis_host": "hh",
                      "redis_keepalive_timeout": 10})"),
            "property \"redis_keepalive_timeout\" validation failed: expected 10 to be at least "
            "1000");
  EXPECT_EQ(Error(R"({"rules": [{"count": 1, "time_window": 1, "key": "a"},
                               {"count": 2, "time_window": 2, "key": "a"}]})"),
            "duplicate key 'a' in rules");
  EXPECT_EQ(Error(R"({"rules": [{"count": 1, "key": "a"}]})"),
            "property \"rules\" validation failed: failed to validate item 1: property "
            "\"time_window\" is required");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "show_limit_quota_header": 1})"),
            "property \"show_limit_quota_header\" validation failed: wrong type: expected "
            "boolean, got number");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis-sentinel",
                      "redis_master_name": "m"})"),
            "then clause did not match: property \"redis_sentinels\" is required");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis-sentinel",
                      "redis_master_name": "m", "redis_sentinels": [{"host": "h"}]})"),
            "property \"redis_sentinels\" validation failed: failed to validate item 1: "
            "property \"port\" is required");
  EXPECT_NE(Error(R"({"count": 1, "time_window": 60, "policy": "redis-sentinel",
                      "redis_master_name": "m", "redis_role": "slave",
                      "redis_sentinels": [{"host": "h", "port": 26379}]})")
                .find("\"slave\" is not supported"),
            std::string::npos);
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis-cluster",
                      "redis_cluster_name": "c"})"),
            "then clause did not match: property \"redis_cluster_nodes\" is required");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis-cluster",
                      "redis_cluster_nodes": ["127.0.0.1:7000"]})"),
            "then clause did not match: property \"redis_cluster_name\" is required");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis-cluster",
                      "redis_cluster_name": "c", "redis_cluster_nodes": []})"),
            "property \"redis_cluster_nodes\" validation failed: expect array to have at least 1 "
            "items");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis-cluster",
                      "redis_cluster_name": "c", "redis_cluster_nodes": ["127.0.0.1:7000", "x"]})"),
            "property \"redis_cluster_nodes\" validation failed: failed to validate item 2: "
            "string too short, expected at least 2, got 1");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis-cluster",
                      "redis_cluster_name": "c", "redis_cluster_nodes": ["127.0.0.1"]})"),
            "property \"redis_cluster_nodes\" validation failed: failed to validate item 1: "
            "failed to parse address: 127.0.0.1 (expected host:port)");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis-cluster",
                      "redis_cluster_name": "c", "redis_cluster_nodes": ["h:70000"]})"),
            "property \"redis_cluster_nodes\" validation failed: failed to validate item 1: "
            "failed to parse address: h:70000 (expected host:port)");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis-cluster",
                      "redis_cluster_name": 1, "redis_cluster_nodes": ["h:7000"]})"),
            "property \"redis_cluster_name\" validation failed: wrong type: expected string, got "
            "number");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis-cluster",
                      "redis_cluster_name": "c", "redis_cluster_nodes": ["h:7000"],
                      "redis_timeout": 0})"),
            "property \"redis_timeout\" validation failed: expected 0 to be at least 1");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis-cluster",
                      "redis_cluster_name": "c", "redis_cluster_nodes": ["h:7000"],
                      "redis_cluster_ssl": true})"),
            "property \"redis_cluster_ssl\" validation failed: TLS to Redis is not supported yet");
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 60, "policy": "redis-cluster",
                      "redis_cluster_name": "c", "redis_cluster_nodes": ["h:7000"],
                      "redis_cluster_ssl_verify": "yes"})"),
            "property \"redis_cluster_ssl_verify\" validation failed: wrong type: expected "
            "boolean, got string");
  // Sliding windows on every Redis policy, but not with delayed sync (yet).
  for (const char* conf : {
           R"({"count": 1, "time_window": 60, "policy": "redis-cluster",
               "redis_cluster_name": "c", "redis_cluster_nodes": ["h:7000"],
               "window_type": "sliding"})",
           R"({"count": 1, "time_window": 60, "policy": "redis", "redis_host": "hh",
               "window_type": "sliding"})",
           R"({"count": 1, "time_window": 60, "policy": "redis-sentinel",
               "redis_sentinels": [{"host": "hh", "port": 26379}], "redis_master_name": "m",
               "window_type": "sliding"})"}) {
    StatusOr<PluginConstSharedPtr> p = factory_.Create(nlohmann::json::parse(conf), fctx_);
    EXPECT_TRUE(p.ok()) << conf << ": " << p.status().message();
  }
  // Delayed sync with a sliding window, as APISIX; the interval stays below the window.
  for (const char* policy : {R"("policy": "redis", "redis_host": "hh")",
                             R"("policy": "redis-cluster", "redis_cluster_name": "c",
                                "redis_cluster_nodes": ["127.0.0.1:7000"])"}) {
    std::string conf =
        std::string(R"({"count": 1, "time_window": 60, "window_type": "sliding", )") + policy +
        R"(, "sync_interval": 1})";
    StatusOr<PluginConstSharedPtr> p = factory_.Create(nlohmann::json::parse(conf), fctx_);
    EXPECT_TRUE(p.ok()) << conf << ": " << p.status().message();
  }
  EXPECT_EQ(Error(R"({"count": 1, "time_window": 2, "policy": "redis", "redis_host": "hh",
                      "window_type": "sliding", "sync_interval": 2})"),
            "property \"sync_interval\" validation failed: must be less than time_window");
}

TEST_F(LimitCountTest, ClusterConfigKeepsItsSeedsAndCredentials) {
  auto p = Make(R"({"count": 1, "time_window": 60, "policy": "redis-cluster",
                    "redis_cluster_name": "c1", "redis_password": "pw", "redis_timeout": 250,
                    "redis_cluster_nodes": ["127.0.0.1:7000", "[::1]:7001", "redis-a:7002"],
                    "redis_cluster_ssl_verify": true, "redis_keepalive_pool": 5})");
  ASSERT_NE(p, nullptr);
  const RedisConfig& r = p->config().redis;
  ASSERT_EQ(r.cluster_nodes.size(), 3u);
  EXPECT_EQ(r.cluster_nodes[0].host, "127.0.0.1");
  EXPECT_EQ(r.cluster_nodes[0].port, 7000);
  EXPECT_EQ(r.cluster_nodes[1].host, "::1");
  EXPECT_EQ(r.cluster_nodes[1].port, 7001);
  EXPECT_EQ(r.cluster_nodes[2].host, "redis-a");
  EXPECT_EQ(r.cluster_name, "c1");
  EXPECT_EQ(r.password, "pw");
  EXPECT_EQ(r.timeout_ms, 250);
  EXPECT_EQ(r.keepalive_pool, 5);
  EXPECT_EQ(p->config().policy, Policy::kRedisCluster);
}

TEST_F(LimitCountTest, FixedWindowCountsAndResets) {
  auto p = Make(R"({"count": 2, "time_window": 60, "rejected_code": 429,
                    "rejected_msg": "slow down"})");
  FakePluginContext ctx;
  ctx.vars["remote_addr"] = "10.0.0.1";
  EXPECT_EQ(Run(*p, ctx), 0);
  EXPECT_EQ(H(ctx, "X-RateLimit-Limit"), "2");
  EXPECT_EQ(H(ctx, "X-RateLimit-Remaining"), "1");
  EXPECT_EQ(H(ctx, "X-RateLimit-Reset"), "60");  // the request that opened the window
  fctx_.fake_clock.Advance(10'250);
  EXPECT_EQ(Run(*p, ctx), 0);
  EXPECT_EQ(H(ctx, "X-RateLimit-Remaining"), "0");
  EXPECT_EQ(H(ctx, "X-RateLimit-Reset"), "49.75");
  EXPECT_EQ(Run(*p, ctx), 429);
  EXPECT_EQ(ctx.respond_body, "{\"error_msg\":\"slow down\"}\n");
  EXPECT_EQ(H(ctx, "X-RateLimit-Remaining"), "0");
  // Another client has its own counter.
  FakePluginContext other;
  other.vars["remote_addr"] = "10.0.0.2";
  EXPECT_EQ(Run(*p, other), 0);
  // The window ends 60 s after its first request: a new one opens.
  fctx_.fake_clock.Advance(49'750);
  EXPECT_EQ(Run(*p, ctx), 0);
  EXPECT_EQ(H(ctx, "X-RateLimit-Remaining"), "1");
  EXPECT_EQ(H(ctx, "X-RateLimit-Reset"), "60");
}

TEST_F(LimitCountTest, KeysFallBackToTheClientAddress) {
  auto by_header = Make(R"({"count": 1, "time_window": 60, "key": "http_x_user"})");
  FakePluginContext a;
  a.vars["remote_addr"] = "10.0.0.1";
  a.request_headers = {{"X-User", "alice"}};
  EXPECT_EQ(Run(*by_header, a), 0);
  EXPECT_EQ(Run(*by_header, a), 503);  // the default rejected_code, no body
  EXPECT_EQ(a.respond_body, "");
  FakePluginContext b;  // same address, another user
  b.vars["remote_addr"] = "10.0.0.1";
  b.request_headers = {{"X-User", "bob"}};
  EXPECT_EQ(Run(*by_header, b), 0);
  FakePluginContext none;  // no header: counted by address (10.0.0.1 has not been yet)
  none.vars["remote_addr"] = "10.0.0.1";
  EXPECT_EQ(Run(*by_header, none), 0);
  EXPECT_EQ(Run(*by_header, none), 503);

  auto combo = Make(R"({"count": 1, "time_window": 60, "key_type": "var_combination",
                        "key": "$http_x_a-$http_x_b"})");
  FakePluginContext c;
  c.vars["remote_addr"] = "10.0.0.9";
  c.request_headers = {{"X-B", "1"}};
  EXPECT_EQ(Run(*combo, c), 0);
  EXPECT_EQ(Run(*combo, c), 503);
  FakePluginContext d;  // nothing resolves: the address, which has its own counter
  d.vars["remote_addr"] = "10.0.0.9";
  EXPECT_EQ(Run(*combo, d), 0);

  auto constant = Make(R"({"count": 1, "time_window": 60, "key_type": "constant",
                           "key": "everyone"})");
  FakePluginContext e, f;
  e.vars["remote_addr"] = "1.1.1.1";
  f.vars["remote_addr"] = "2.2.2.2";
  EXPECT_EQ(Run(*constant, e), 0);
  EXPECT_EQ(Run(*constant, f), 503);
}

TEST_F(LimitCountTest, TemplatedCountAndWindow) {
  auto p = Make(R"({"count": "${http_count ?? 2}", "time_window": 60})");
  FakePluginContext ctx;
  ctx.vars["remote_addr"] = "10.0.0.1";
  EXPECT_EQ(Run(*p, ctx), 0);
  EXPECT_EQ(H(ctx, "X-RateLimit-Limit"), "2");
  ctx.request_headers = {{"Count", "5"}};
  EXPECT_EQ(Run(*p, ctx), 0);
  EXPECT_EQ(H(ctx, "X-RateLimit-Limit"), "5");
  EXPECT_EQ(H(ctx, "X-RateLimit-Remaining"), "3");
  ctx.request_headers = {{"Count", "-1"}};
  EXPECT_EQ(Run(*p, ctx), 500);                           // not a bypass
  ctx.request_headers = {{"Count", "9007199254740992"}};  // 2^53
  EXPECT_EQ(Run(*p, ctx), 500);
}

TEST_F(LimitCountTest, RulesHavePrefixedHeadersAndTheirOwnCounters) {
  auto p = Make(R"({"rules": [
      {"count": 1, "time_window": 10, "key": "$http_x_user"},
      {"count": 3, "time_window": 60, "key": "$remote_addr", "header_prefix": "ip"}]})");
  FakePluginContext ctx;
  ctx.vars["remote_addr"] = "10.0.0.1";
  ctx.request_headers = {{"X-User", "u"}};
  EXPECT_EQ(Run(*p, ctx), 0);
  EXPECT_EQ(H(ctx, "X-1-RateLimit-Limit"), "1");
  EXPECT_EQ(H(ctx, "X-1-RateLimit-Remaining"), "0");
  EXPECT_EQ(H(ctx, "X-ip-RateLimit-Limit"), "3");
  EXPECT_EQ(H(ctx, "X-ip-RateLimit-Remaining"), "2");
  EXPECT_EQ(Run(*p, ctx), 503);  // the first rule rejects
  ctx.request_headers.clear();   // the first rule does not apply without the header
  EXPECT_EQ(Run(*p, ctx), 0);
  EXPECT_EQ(H(ctx, "X-1-RateLimit-Limit"), "<none>");
  // The second request stopped at the first rule: the second counted requests 1 and 3.
  EXPECT_EQ(H(ctx, "X-ip-RateLimit-Remaining"), "1");

  auto none = Make(R"({"rules": [{"count": 1, "time_window": 10, "key": "$http_x_user"}]})");
  FakePluginContext bare;
  EXPECT_EQ(Run(*none, bare), 500);  // no rule applies
  auto degraded = Make(R"({"rules": [{"count": 1, "time_window": 10, "key": "$http_x_user"}],
                           "allow_degradation": true})");
  EXPECT_EQ(Run(*degraded, bare), 0);
}

TEST_F(LimitCountTest, MetadataRenamesHeadersAndHeadersCanBeHidden) {
  fctx_.metadata_json = {
      {"limit_header", "X-Limit"}, {"remaining_header", "X-Left"}, {"reset_header", "X-Reset"}};
  auto p = Make(R"({"count": 5, "time_window": 60})");
  FakePluginContext ctx;
  ctx.vars["remote_addr"] = "10.0.0.1";
  EXPECT_EQ(Run(*p, ctx), 0);
  EXPECT_EQ(H(ctx, "X-Limit"), "5");
  EXPECT_EQ(H(ctx, "X-Left"), "4");
  EXPECT_EQ(H(ctx, "X-Reset"), "60");
  EXPECT_EQ(H(ctx, "X-RateLimit-Limit"), "<none>");
  fctx_.metadata_json = nlohmann::json::object();
  auto hidden = Make(R"({"count": 5, "time_window": 60, "show_limit_quota_header": false})");
  EXPECT_EQ(Run(*hidden, ctx), 0);
  EXPECT_EQ(ctx.response_headers.size(), 0u);
}

TEST_F(LimitCountTest, CounterIdentityFollowsOwnerConfAndGroup) {
  const std::string conf = R"({"count": 1, "time_window": 60})";
  auto a = Make(conf);
  auto a_again = Make(conf);  // a reload of the same route and conf: the same counter
  fctx_.owner_id = "2";
  auto b = Make(conf);  // the same conf on another route: its own counter
  fctx_.owner_id = "1";
  auto edited = Make(R"({"count": 1, "time_window": 60, "rejected_code": 429})");
  FakePluginContext ctx;
  ctx.vars["remote_addr"] = "10.0.0.1";
  EXPECT_EQ(Run(*a, ctx), 0);
  EXPECT_EQ(Run(*a_again, ctx), 503);
  EXPECT_EQ(Run(*b, ctx), 0);
  EXPECT_EQ(Run(*edited, ctx), 0);  // an edited conf starts afresh
  EXPECT_EQ(a->config().identity_prefix.rfind("/apisix/routes/1:", 0), 0u);

  auto g1 = Make(R"({"count": 1, "time_window": 60, "group": "g"})");
  fctx_.owner_id = "3";
  auto g2 = Make(R"({"count": 1, "time_window": 60, "group": "g"})");
  EXPECT_EQ(g1->config().identity_prefix, "g:");
  EXPECT_EQ(Run(*g1, ctx), 0);
  EXPECT_EQ(Run(*g2, ctx), 503);  // one counter for the group
}

TEST_F(LimitCountTest, AGroupSharesOneConfPerBuild) {
  auto a = Make(R"({"count": 1, "time_window": 60, "group": "g"})");
  auto b = Make(R"({"count": 1, "time_window": 60, "group": "g"})");
  auto c = Make(R"({"count": 2, "time_window": 60, "group": "g"})");
  EXPECT_TRUE(factory_.Admit(*a, 1).ok());
  EXPECT_TRUE(factory_.Admit(*b, 1).ok());
  Status mismatch = factory_.Admit(*c, 1);
  EXPECT_EQ(mismatch.message(), "group conf mismatched");
  // The next build may change the group's conf, as long as every member follows.
  EXPECT_TRUE(factory_.Admit(*c, 2).ok());
  EXPECT_FALSE(factory_.Admit(*a, 2).ok());
}

TEST_F(LimitCountTest, SlidingWindowEstimatesFromThePreviousWindow) {
  auto p = Make(R"({"count": 10, "time_window": 10, "window_type": "sliding"})");
  FakePluginContext ctx;
  ctx.vars["remote_addr"] = "10.0.0.1";
  // Align to a window start: 1'700'000'000'000 is a multiple of 10 s.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Run(*p, ctx), 0) << i;
  EXPECT_EQ(Run(*p, ctx), 503);  // this window is full
  EXPECT_EQ(H(ctx, "X-RateLimit-Reset"), "10");
  // 5 s into the next window, half of the previous one still counts: 5 estimated.
  fctx_.fake_clock.Advance(15'000);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Run(*p, ctx), 0) << i;
  EXPECT_EQ(Run(*p, ctx), 503);
  // Two windows later nothing is left of it.
  fctx_.fake_clock.Advance(20'000);
  EXPECT_EQ(Run(*p, ctx), 0);
  EXPECT_EQ(H(ctx, "X-RateLimit-Remaining"), "9");
}

TEST(CounterTableTest, ExpiredSlotsAreReusedAndAFullWindowEvictsTheOldest) {
  CounterTable t(1024);
  EXPECT_EQ(t.capacity(), 1024u);
  for (int i = 0; i < 2000; ++i) {
    CounterKey k = Fingerprint("p:", std::to_string(i));
    EXPECT_TRUE(t.TakeFixed(k, 1, 1000 + i, 0).allowed);
  }
  EXPECT_GT(t.evictions(), 0u);  // more keys than slots
  EXPECT_LE(t.live(0), 1024u);
  // Once every window has ended, all slots are free again without any sweep.
  EXPECT_EQ(t.live(10'000), 0u);
  uint64_t before = t.evictions();
  for (int i = 0; i < 500; ++i) {
    EXPECT_TRUE(t.TakeFixed(Fingerprint("q:", std::to_string(i)), 1, 1000, 10'000).allowed);
  }
  EXPECT_EQ(t.evictions(), before);
}

TEST(CounterTableTest, WorkersShareOneCounterPerKey) {
  CounterTable t(4096);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10000;
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < kPerThread; ++j) {
        CounterKey k = Fingerprint("p:", std::to_string(j % 64));
        if (t.TakeFixed(k, 100, 60'000, 0).allowed) allowed.fetch_add(1);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(allowed.load(), 64 * 100);  // exactly the limit per key, whatever the interleaving
}

TEST(CounterTableTest, FingerprintsSeparateThePartsOfAnIdentity) {
  EXPECT_FALSE(Fingerprint("ab", "c") == Fingerprint("a", "bc"));
  EXPECT_FALSE(Fingerprint("route:1:", "x") == Fingerprint("route:1:", "y"));
  EXPECT_TRUE(Fingerprint("route:1:", "x") == Fingerprint("route:1:", "x"));
  EXPECT_EQ(Crc32("123456789"), 0xcbf43926u);  // the CRC-32 check value
}

}  // namespace
}  // namespace turnpike::plugins::limit_count
