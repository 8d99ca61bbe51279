// Expr::Eval and IpMatcher::Match do not allocate; Eval is safe from several threads at once.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "expr/expr.h"
#include "expr/ip_matcher.h"
#include "expr/lua_number.h"
#include "fake_request_vars.h"
#include "support/alloc_counter.h"

namespace turnpike::expr {
namespace {

using testing::FakeRequestVars;

constexpr const char* kRule = R"([
  "AND",
  ["arg_name", "==", "json"],
  ["OR", ["http_x_version", "~~", "^v[0-9]+$"], ["http_x_version", "~*", "^BETA"]],
  ["arg_n", ">=", 10],
  ["arg_n", "~=", 13],
  ["remote_addr", "ipmatch", ["10.0.0.0/8", "192.168.0.0/16", "2001:db8::/32"]],
  ["arg_env", "!", "in", ["dev", "test"]],
  ["cookie_id", "==", null]
])";

TEST(ExprNoAllocTest, EvalDoesNotAllocate) {
  StatusOr<ExprConstPtr> compiled = Expr::Compile(nlohmann::json::parse(kRule));
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  const Expr& e = *compiled.value();
  FakeRequestVars hit{{"arg_name", "json"},
                      {"http_x_version", "beta-2"},
                      {"arg_n", "0x10"},
                      {"remote_addr", "2001:db8::7"},
                      {"arg_env", "prod"}};
  FakeRequestVars miss{{"arg_name", "json"},
                       {"http_x_version", "v3"},
                       {"arg_n", "12"},
                       {"remote_addr", "172.16.0.1"}};
  // The first regex search on a thread creates its match block.
  ASSERT_TRUE(e.Eval(hit));
  ASSERT_FALSE(e.Eval(miss));

  const uint64_t before = turnpike::testing::ThreadAllocations();
  int trues = 0;
  for (int i = 0; i < 1000; ++i) {
    trues += e.Eval(hit) ? 1 : 0;
    trues += e.Eval(miss) ? 1 : 0;
  }
  EXPECT_EQ(turnpike::testing::ThreadAllocations() - before, 0u);
  EXPECT_EQ(trues, 1000);
}

TEST(ExprNoAllocTest, IpMatcherAndToNumberDoNotAllocate) {
  std::vector<std::string> cidrs;
  for (int i = 0; i < 1000; ++i) {
    cidrs.push_back("10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24");
  }
  cidrs.push_back("2001:db8::/32");
  StatusOr<IpMatcher> m = IpMatcher::Build(cidrs);
  ASSERT_TRUE(m.ok());
  const uint64_t before = turnpike::testing::ThreadAllocations();
  int hits = 0;
  double sum = 0;
  for (int i = 0; i < 100; ++i) {
    hits += m.value().Match("10.3.7.1") ? 1 : 0;
    hits += m.value().Match("11.3.7.1") ? 1 : 0;
    hits += m.value().Match("2001:db8:1::1") ? 1 : 0;
    hits += m.value().Match("[::1]") ? 1 : 0;
    sum += *LuaToNumber(" 0x1.8p1 ") + *LuaToNumber("1e3") + *LuaToNumber("1e999");
  }
  EXPECT_EQ(turnpike::testing::ThreadAllocations() - before, 0u);
  EXPECT_EQ(hits, 200);
  EXPECT_GT(sum, 0);
}

TEST(ExprThreadsTest, ConcurrentEvalOnOneExpr) {
  StatusOr<ExprConstPtr> compiled = Expr::Compile(nlohmann::json::parse(kRule));
  ASSERT_TRUE(compiled.ok());
  const Expr& e = *compiled.value();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&e, &wrong, t] {
      FakeRequestVars hit{{"arg_name", "json"},
                          {"http_x_version", "v" + std::to_string(t)},
                          {"arg_n", "10"},
                          {"remote_addr", "10.1.1.1"}};
      FakeRequestVars miss{{"arg_name", "json"},
                           {"http_x_version", "x" + std::to_string(t)},
                           {"arg_n", "10"},
                           {"remote_addr", "10.1.1.1"}};
      for (int i = 0; i < 20000; ++i) {
        if (!e.Eval(hit) || e.Eval(miss)) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace turnpike::expr
