// RouteTable::Match() must not allocate (support/alloc_counter counts the calling thread's heap
// allocations).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "router/route_table.h"
#include "support/alloc_counter.h"

namespace turnpike::router {
namespace {

TEST(RouteTableNoAllocTest, MatchDoesNotAllocate) {
  std::vector<RouteKey> keys;
  for (int i = 0; i < 1000; ++i) {
    RouteKey k;
    const std::string n = std::to_string(i);
    k.uris = {std::string("/svc").append(n).append("/x"),
              std::string("/svc").append(n).append("/*"),
              std::string("/g").append(n).append("/*/end")};
    if (i % 3 == 0) {
      k.hosts = {std::string("h").append(n).append(".com"),
                 std::string("*.w").append(n).append(".com")};
    }
    k.methods = i % 2 ? base::kAnyMethod : base::MaskOf(base::Method::kPost);
    k.payload = static_cast<uint32_t>(i);
    keys.push_back(std::move(k));
  }
  auto table = RouteTable::Build(std::move(keys));
  const std::string paths[] = {"/svc3/x", "/svc4/y/z", "/g5/a/b/end", "/g5/a/b/nope", "/none"};
  const std::string hosts[] = {"h3.com", "a.w3.com", "other.com", ""};

  volatile uint32_t sink = 0;
  const uint64_t before = turnpike::testing::ThreadAllocations();
  for (const auto& p : paths) {
    for (const auto& h : hosts) {
      sink = sink + table->Match(base::Method::kGet, h, p);
      sink = sink + table->Match(base::Method::kPost, h, p);
    }
  }
  EXPECT_EQ(turnpike::testing::ThreadAllocations() - before, 0u);
  EXPECT_NE(sink, 0u);
}

class AcceptOdd final : public RouteFilter {
 public:
  bool Accept(uint32_t payload, const PathParams& params) override {
    return (payload + params.count) % 2 == 1;
  }
};

TEST(RouteTableNoAllocTest, ParamModeFilterAndInfoDoNotAllocate) {
  std::vector<RouteKey> keys;
  for (int i = 0; i < 1000; ++i) {
    RouteKey k;
    const std::string n = std::to_string(i);
    k.uris = {std::string("/svc").append(n).append("/users/:id"),
              std::string("/svc").append(n).append("/users/:id/posts/*rest"),
              std::string("/svc").append(n).append("/files/*"), std::string("/x").append(n)};
    if (i % 3 == 0) k.hosts = {std::string("*.w").append(n).append(".com")};
    k.has_filter = i % 2 == 0;
    k.payload = static_cast<uint32_t>(i);
    keys.push_back(std::move(k));
  }
  const std::string paths[] = {"/svc3/users/42", "/svc4/users/42/posts/a/b",
                               "/svc5/files/x",  "/x7",
                               "/svc3/users/",   "/none"};
  const std::string hosts[] = {"a.w3.com", "other.com", ""};
  for (Mode mode : {Mode::kHostUri, Mode::kUri, Mode::kUriWithParameter}) {
    auto table = RouteTable::Build(keys, mode);
    AcceptOdd filter;
    PathParams params;
    MatchInfo info;
    volatile uint32_t sink = 0;
    const uint64_t before = turnpike::testing::ThreadAllocations();
    for (const auto& p : paths) {
      for (const auto& h : hosts) {
        sink = sink + table->Match(MatchRequest{base::Method::kGet, h, p}, &filter, &params, &info);
        sink =
            sink + table->Match(MatchRequest{base::Method::kGet, h, p}, &filter, nullptr, nullptr);
        sink = sink + table->Match(MatchRequest{base::Method::kGet, h, p}, nullptr, &params, &info);
      }
    }
    EXPECT_EQ(turnpike::testing::ThreadAllocations() - before, 0u);
    EXPECT_NE(sink, 0u);
  }
}

}  // namespace
}  // namespace turnpike::router
