// Randomized comparison with LinearRouteMatcher, and a 50k-route sanity check.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "router/linear_route_matcher.h"
#include "router/route_table.h"

namespace turnpike::router {
namespace {

using base::Method;

// Small alphabets so that routes collide in buckets, share prefixes and tie on priority.
std::string RandomPath(std::mt19937& rng) {
  static const char* kSegments[] = {"a", "b", "ab", "", "a:b"};
  std::string path;
  const int depth = static_cast<int>(rng() % 4);
  for (int i = 0; i < depth; ++i) {
    path += '/';
    path += kSegments[rng() % std::size(kSegments)];
  }
  return path.empty() ? "/" : path;
}

std::string RandomUri(std::mt19937& rng) {
  std::string path = RandomPath(rng);
  switch (rng() % 6) {
    case 0:
      return path + "*";
    case 1:
      return path + (path.back() == '/' ? "*" : "/*");
    case 2: {
      const size_t cut = rng() % (path.size() + 1);
      return path.substr(0, cut) + "*" + path.substr(cut);
    }
    case 3:
      return rng() % 8 == 0 ? "*" : path;
    default:
      return path;
  }
}

const char* const kHosts[] = {"a.com", "b.a.com", "x.b.a.com", "com", ".a.com", "other.org", ""};
const char* const kRouteHosts[] = {"a.com", "b.a.com", "*.a.com", "*.b.a.com", "*.com",
                                   "*",     "*a.com",  "A.com",   "other.org"};

std::vector<RouteKey> RandomKeys(std::mt19937& rng, int count) {
  std::vector<RouteKey> keys;
  for (int i = 0; i < count; ++i) {
    RouteKey k;
    const int uris = 1 + static_cast<int>(rng() % 3 == 0 ? rng() % 3 : 0);
    for (int u = 0; u < uris; ++u) k.uris.push_back(RandomUri(rng));
    if (rng() % 2 == 0) {
      const int hosts = 1 + static_cast<int>(rng() % 2);
      for (int h = 0; h < hosts; ++h)
        k.hosts.push_back(kRouteHosts[rng() % std::size(kRouteHosts)]);
    }
    if (rng() % 3 == 0) k.methods = static_cast<base::MethodMask>(rng() & 0x7ff);
    k.priority = static_cast<int>(rng() % 3) - 1;
    k.payload = static_cast<uint32_t>(i);
    keys.push_back(std::move(k));
  }
  return keys;
}

// Param-mode uris: segments that are parameters, named or anonymous rests, a '*' or ':' inside
// a segment, trailing stars.
std::string RandomParamUri(std::mt19937& rng) {
  static const char* kSegments[] = {"a", "b", "ab", "", "a:b", ":p", ":q", "*r", "*", "a*", "*b"};
  std::string uri;
  const int depth = static_cast<int>(rng() % 4);
  for (int i = 0; i < depth; ++i) {
    uri += '/';
    uri += kSegments[rng() % std::size(kSegments)];
  }
  if (uri.empty()) uri = "/";
  if (rng() % 4 == 0) uri += "*";
  return uri;
}

// Accepts or rejects as a pure function of its arguments.
class HashFilter final : public RouteFilter {
 public:
  explicit HashFilter(uint32_t salt) : salt_(salt) {}
  bool Accept(uint32_t payload, const PathParams& params) override {
    uint32_t h = payload * 2654435761u + salt_;
    for (size_t i = 0; i < params.count; ++i) {
      for (char c : params.names[i]) h = h * 31 + static_cast<unsigned char>(c);
      for (char c : params.values[i]) h = h * 31 + static_cast<unsigned char>(c);
    }
    return (h >> 7) % 3 != 0;
  }

 private:
  uint32_t salt_;
};

std::string Describe(const PathParams& p) {
  std::string out;
  for (size_t i = 0; i < p.count; ++i) {
    out.append(p.names[i]).append("=").append(p.values[i]).append(";");
  }
  return out;
}

TEST(RouteTableRandomTest, AllModesWithFiltersAgreeWithLinearMatcher) {
  for (Mode mode : {Mode::kHostUri, Mode::kUri, Mode::kUriWithParameter}) {
    for (uint32_t seed = 1; seed <= 300; ++seed) {
      std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(mode));
      const int count = 1 + static_cast<int>(rng() % 40);
      std::vector<RouteKey> keys = RandomKeys(rng, count);
      for (RouteKey& k : keys) {
        if (mode == Mode::kUriWithParameter && rng() % 2 == 0) {
          for (std::string& uri : k.uris) uri = RandomParamUri(rng);
        }
        k.has_filter = rng() % 2 == 0;
      }
      LinearRouteMatcher linear(keys, mode);
      auto table = RouteTable::Build(keys, mode);
      HashFilter filter(seed);
      for (int q = 0; q < 200; ++q) {
        MatchRequest req;
        req.method = static_cast<Method>(rng() % 11);
        const std::string host = kHosts[rng() % std::size(kHosts)];
        const std::string path = RandomPath(rng) + (rng() % 4 == 0 ? "/b" : "");
        req.host = host;
        req.path = path;
        RouteFilter* f = rng() % 4 == 0 ? nullptr : &filter;
        PathParams got_params;
        PathParams want_params;
        MatchInfo got_info;
        MatchInfo want_info;
        const uint32_t got = table->Match(req, f, &got_params, &got_info);
        const uint32_t want = linear.Match(req, f, &want_params, &want_info);
        ASSERT_EQ(got, want) << "mode " << static_cast<int>(mode) << " seed " << seed << " method "
                             << base::MethodName(req.method) << " host '" << host << "' path '"
                             << path << "'";
        ASSERT_EQ(Describe(got_params), Describe(want_params)) << "seed " << seed << " " << path;
        ASSERT_EQ(got_info.matched_uri, want_info.matched_uri) << "seed " << seed << " " << path;
        ASSERT_EQ(got_info.matched_host, want_info.matched_host) << "seed " << seed << " " << path;
      }
    }
  }
}

TEST(RouteTableRandomTest, AgreesWithLinearMatcher) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    const int count = 1 + static_cast<int>(rng() % 40);
    std::vector<RouteKey> keys = RandomKeys(rng, count);
    LinearRouteMatcher linear(keys);
    auto table = RouteTable::Build(keys);
    for (int q = 0; q < 200; ++q) {
      const auto method = static_cast<Method>(rng() % 11);
      const std::string host = kHosts[rng() % std::size(kHosts)];
      const std::string path = RandomPath(rng) + (rng() % 4 == 0 ? "/b" : "");
      ASSERT_EQ(table->Match(method, host, path), linear.Match(method, host, path))
          << "seed " << seed << " method " << base::MethodName(method) << " host '" << host
          << "' path '" << path << "'";
    }
  }
}

// The benchmark's shape: services with exact and prefix routes, some bound to hosts.
std::vector<RouteKey> ServiceKeys(int count) {
  std::vector<RouteKey> keys;
  for (int i = 0; i < count; ++i) {
    RouteKey k;
    const std::string svc = "/api/v" + std::to_string(i % 3) + "/svc" + std::to_string(i);
    switch (i % 4) {
      case 0:
        k.uris = {svc + "/items"};
        break;
      case 1:
        k.uris = {svc + "/*"};
        break;
      case 2:
        k.uris = {svc + "/items", svc + "/items/*"};
        k.hosts = {"tenant" + std::to_string(i % 97) + ".example.com"};
        break;
      default:
        k.uris = {svc + "*"};
        k.hosts = {"*.t" + std::to_string(i % 31) + ".example.com"};
        k.methods = base::MaskOf(Method::kGet);
        break;
    }
    k.payload = static_cast<uint32_t>(i);
    keys.push_back(std::move(k));
  }
  return keys;
}

TEST(RouteTableRandomTest, FiftyThousandRoutes) {
  constexpr int kCount = 50000;
  std::vector<RouteKey> keys = ServiceKeys(kCount);
  const auto start = std::chrono::steady_clock::now();
  auto table = RouteTable::Build(keys);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  RecordProperty(
      "build_ms",
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
  EXPECT_LT(elapsed, std::chrono::seconds(5));  // generous: sanitizer builds run this too
  ASSERT_EQ(table->size(), static_cast<size_t>(kCount));

  for (int i = 0; i < kCount; ++i) {
    const std::string svc = "/api/v" + std::to_string(i % 3) + "/svc" + std::to_string(i);
    std::string host = "nohost.org";
    if (i % 4 == 2) host = "tenant" + std::to_string(i % 97) + ".example.com";
    if (i % 4 == 3) host = "x.t" + std::to_string(i % 31) + ".example.com";
    ASSERT_EQ(table->Match(Method::kGet, host, svc + "/items"), static_cast<uint32_t>(i)) << i;
  }
  // "/api/v0/svc1/x" is covered by route 1's "/api/v0/svc1/*"... unless a longer prefix of
  // another service applies, which none does.
  EXPECT_EQ(table->Match(Method::kGet, "nohost.org", "/api/v1/svc1/x"), 1u);
  EXPECT_EQ(table->Match(Method::kGet, "nohost.org", "/api/v0/svc0/other"), RouteTable::kNoMatch);
  // Route 3 ("/api/v0/svc3*", GET only on *.t3.example.com) and 11 share nothing.
  EXPECT_EQ(table->Match(Method::kGet, "a.t3.example.com", "/api/v0/svc3xyz"), 3u);
  EXPECT_EQ(table->Match(Method::kPost, "a.t3.example.com", "/api/v0/svc3xyz"),
            RouteTable::kNoMatch);

  // Spot-check against the linear matcher on a sample of requests.
  LinearRouteMatcher linear(keys);
  std::mt19937 rng(7);
  for (int q = 0; q < 300; ++q) {
    const int i = static_cast<int>(rng() % kCount);
    const std::string path = "/api/v" + std::to_string(rng() % 3) + "/svc" + std::to_string(i) +
                             (rng() % 2 ? "/items" : "/items/1");
    const std::string host = rng() % 2 ? "tenant" + std::to_string(rng() % 97) + ".example.com"
                                       : "a.t" + std::to_string(rng() % 31) + ".example.com";
    const auto method = rng() % 2 ? Method::kGet : Method::kPost;
    ASSERT_EQ(table->Match(method, host, path), linear.Match(method, host, path)) << path;
  }
}

}  // namespace
}  // namespace turnpike::router
