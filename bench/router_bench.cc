// RouteTable::Match() at 10 / 1k / 50k routes against the linear scan it replaces (host+uri,
// uri and param modes), Build() at 50k routes, and the prefix-lookup structure choice (radix
// trie vs hash maps probed once per distinct prefix length).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "router/byte_trie.h"
#include "router/linear_route_matcher.h"
#include "router/route_table.h"

namespace turnpike::router {
namespace {

using base::Method;

std::string Num(int i) { return std::to_string(i); }

// A gateway-like config: per service an exact route, a prefix route, a host-bound pair or a
// GET-only wildcard-host prefix route, plus a catch-all.
std::vector<RouteKey> MakeRoutes(int count) {
  std::vector<RouteKey> keys;
  keys.reserve(static_cast<size_t>(count));
  for (int i = 0; i + 1 < count; ++i) {
    RouteKey k;
    const std::string svc = std::string("/api/v").append(Num(i % 3)).append("/svc").append(Num(i));
    switch (i % 4) {
      case 0:
        k.uris = {svc + "/items"};
        break;
      case 1:
        k.uris = {svc + "/*"};
        k.priority = i % 5;
        break;
      case 2:
        k.uris = {svc + "/items", svc + "/items/*"};
        k.hosts = {std::string("tenant").append(Num(i % 97)).append(".example.com")};
        break;
      default:
        k.uris = {svc + "*"};
        k.hosts = {std::string("*.t").append(Num(i % 31)).append(".example.com")};
        k.methods = base::MaskOf(Method::kGet);
        break;
    }
    k.payload = static_cast<uint32_t>(i);
    keys.push_back(std::move(k));
  }
  RouteKey fallback;
  fallback.uris = {"/*"};
  fallback.payload = static_cast<uint32_t>(count - 1);
  keys.push_back(std::move(fallback));
  return keys;
}

struct Request {
  Method method;
  std::string host;
  std::string path;
};

// Hits on every kind of route, deeper paths under prefixes, and misses that end on the
// catch-all, spread over all services.
std::vector<Request> MakeRequests(int routes) {
  std::mt19937 rng(42);
  std::vector<Request> out;
  for (int q = 0; q < 1024; ++q) {
    const int i = static_cast<int>(rng() % static_cast<uint32_t>(std::max(routes - 1, 1)));
    const std::string svc = std::string("/api/v").append(Num(i % 3)).append("/svc").append(Num(i));
    Request r{rng() % 4 == 0 ? Method::kPost : Method::kGet, "www.example.org", svc + "/items"};
    switch (rng() % 5) {
      case 0:
        r.host = std::string("tenant").append(Num(i % 97)).append(".example.com");
        break;
      case 1:
        r.host = std::string("a.t").append(Num(i % 31)).append(".example.com");
        r.path = svc + "/orders/17";
        break;
      case 2:
        r.path = svc + "/items/42/detail";
        break;
      case 3:
        r.path = "/static/css/site.css";
        break;
      default:
        break;
    }
    out.push_back(std::move(r));
  }
  return out;
}

void BM_Match(benchmark::State& state) {
  const int routes = static_cast<int>(state.range(0));
  auto table = RouteTable::Build(MakeRoutes(routes));
  const std::vector<Request> requests = MakeRequests(routes);
  size_t i = 0;
  for (auto _ : state) {
    const Request& r = requests[i++ & 1023];
    benchmark::DoNotOptimize(table->Match(r.method, r.host, r.path));
  }
}
BENCHMARK(BM_Match)->Arg(10)->Arg(1000)->Arg(50000);

void BM_LinearMatch(benchmark::State& state) {
  const int routes = static_cast<int>(state.range(0));
  LinearRouteMatcher linear(MakeRoutes(routes));
  const std::vector<Request> requests = MakeRequests(routes);
  size_t i = 0;
  for (auto _ : state) {
    const Request& r = requests[i++ & 1023];
    benchmark::DoNotOptimize(linear.Match(r.method, r.host, r.path));
  }
}
BENCHMARK(BM_LinearMatch)->Arg(10)->Arg(1000)->Arg(50000);

void BM_Match_UriMode(benchmark::State& state) {
  const int routes = static_cast<int>(state.range(0));
  auto table = RouteTable::Build(MakeRoutes(routes), Mode::kUri);
  const std::vector<Request> requests = MakeRequests(routes);
  size_t i = 0;
  for (auto _ : state) {
    const Request& r = requests[i++ & 1023];
    benchmark::DoNotOptimize(table->Match(r.method, r.host, r.path));
  }
}
BENCHMARK(BM_Match_UriMode)->Arg(10)->Arg(1000)->Arg(50000);

// --- Param mode -----------------------------------------------------------------------------
//
// Per service: "/api/vN/svcI/users/:id", "/api/vN/svcI/users/:id/posts/*rest", an exact
// "/api/vN/svcI/health" and a "/api/vN/svcI/files/*" prefix, plus a catch-all; half of the
// services' routes carry a host.
std::vector<RouteKey> MakeParamRoutes(int count) {
  std::vector<RouteKey> keys;
  keys.reserve(static_cast<size_t>(count));
  for (int i = 0; i + 1 < count; ++i) {
    RouteKey k;
    const std::string svc =
        std::string("/api/v").append(Num(i % 3)).append("/svc").append(Num(i / 4));
    switch (i % 4) {
      case 0:
        k.uris = {svc + "/users/:id"};
        break;
      case 1:
        k.uris = {svc + "/users/:id/posts/*rest"};
        k.hosts = {std::string("tenant").append(Num(i % 97)).append(".example.com")};
        break;
      case 2:
        k.uris = {svc + "/health"};
        break;
      default:
        k.uris = {svc + "/files/*"};
        k.hosts = {"*.example.com"};
        break;
    }
    k.payload = static_cast<uint32_t>(i);
    keys.push_back(std::move(k));
  }
  RouteKey fallback;
  fallback.uris = {"/*"};
  fallback.payload = static_cast<uint32_t>(count - 1);
  keys.push_back(std::move(fallback));
  return keys;
}

std::vector<Request> MakeParamRequests(int routes) {
  std::mt19937 rng(42);
  std::vector<Request> out;
  for (int q = 0; q < 1024; ++q) {
    const int i = static_cast<int>(rng() % static_cast<uint32_t>(std::max(routes - 1, 1)));
    const std::string svc =
        std::string("/api/v").append(Num(i % 3)).append("/svc").append(Num(i / 4));
    Request r{Method::kGet, std::string("tenant").append(Num(i % 97)).append(".example.com"),
              svc + "/users/" + Num(static_cast<int>(rng() % 100000))};
    switch (rng() % 5) {
      case 0:
        r.path += "/posts/2024/05/hello-world";
        break;
      case 1:
        r.path = svc + "/health";
        break;
      case 2:
        r.path = svc + "/files/css/site.css";
        break;
      case 3:
        r.path = "/static/css/site.css";
        break;
      default:
        break;
    }
    out.push_back(std::move(r));
  }
  return out;
}

void BM_Match_ParamMode(benchmark::State& state) {
  const int routes = static_cast<int>(state.range(0));
  auto table = RouteTable::Build(MakeParamRoutes(routes), Mode::kUriWithParameter);
  const std::vector<Request> requests = MakeParamRequests(routes);
  PathParams params;
  MatchInfo info;
  size_t i = 0;
  for (auto _ : state) {
    const Request& r = requests[i++ & 1023];
    benchmark::DoNotOptimize(
        table->Match(MatchRequest{r.method, r.host, r.path}, nullptr, &params, &info));
  }
}
BENCHMARK(BM_Match_ParamMode)->Arg(10)->Arg(1000)->Arg(50000);

void BM_LinearMatch_ParamMode(benchmark::State& state) {
  const int routes = static_cast<int>(state.range(0));
  LinearRouteMatcher linear(MakeParamRoutes(routes), Mode::kUriWithParameter);
  const std::vector<Request> requests = MakeParamRequests(routes);
  PathParams params;
  size_t i = 0;
  for (auto _ : state) {
    const Request& r = requests[i++ & 1023];
    benchmark::DoNotOptimize(
        linear.Match(MatchRequest{r.method, r.host, r.path}, nullptr, &params, nullptr));
  }
}
BENCHMARK(BM_LinearMatch_ParamMode)->Arg(10)->Arg(1000)->Arg(50000);

void BM_Build(benchmark::State& state) {
  const std::vector<RouteKey> keys = MakeRoutes(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<RouteKey> copy = keys;
    state.ResumeTiming();
    benchmark::DoNotOptimize(RouteTable::Build(std::move(copy)));
  }
}
BENCHMARK(BM_Build)->Arg(1000)->Arg(50000)->Unit(benchmark::kMillisecond);

void BM_Build_ParamMode(benchmark::State& state) {
  const std::vector<RouteKey> keys = MakeParamRoutes(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<RouteKey> copy = keys;
    state.ResumeTiming();
    benchmark::DoNotOptimize(RouteTable::Build(std::move(copy), Mode::kUriWithParameter));
  }
}
BENCHMARK(BM_Build_ParamMode)->Arg(50000)->Unit(benchmark::kMillisecond);

// --- Prefix lookup: which structure holds the prefix buckets --------------------------------
//
// Longest matching prefix among `count` prefixes for a request path. "FewLengths": every
// prefix has the same shape ("/svc01234/"), the best case for length probing. "ManyLengths":
// prefixes of 1-6 segments of 2-9 bytes, as configs that mix "/a/*", "/api/v1/users/*" and
// "/static/img/icons/*" produce (dozens of distinct lengths).

std::vector<std::string> MakePrefixes(int count, bool many_lengths, std::mt19937& rng) {
  std::vector<std::string> prefixes;
  for (int i = 0; i < count; ++i) {
    std::string p;
    if (!many_lengths) {
      char buf[24];  // "/svc" + up to 11 digits of an int + "/"
      std::snprintf(buf, sizeof(buf), "/svc%05d/", i);
      p = buf;
    } else {
      const int depth = 1 + static_cast<int>(rng() % 6);
      for (int d = 0; d < depth; ++d) {
        p += '/';
        const int len = 2 + static_cast<int>(rng() % 8);
        for (int c = 0; c < len; ++c) p += static_cast<char>('a' + rng() % 4);
      }
      p += '/';
    }
    prefixes.push_back(std::move(p));
  }
  std::sort(prefixes.begin(), prefixes.end());
  prefixes.erase(std::unique(prefixes.begin(), prefixes.end()), prefixes.end());
  return prefixes;
}

std::vector<std::string> MakePrefixPaths(const std::vector<std::string>& prefixes,
                                         std::mt19937& rng) {
  std::vector<std::string> paths;
  for (int q = 0; q < 1024; ++q) {
    std::string p = prefixes[rng() % prefixes.size()];
    p += "items/";
    p += Num(static_cast<int>(rng() % 100000));
    if (q % 8 == 0) p[1] = 'z';  // a miss
    paths.push_back(std::move(p));
  }
  return paths;
}

// The alternative: one hash map per distinct prefix length, probed longest length first.
class LengthProbe {
 public:
  explicit LengthProbe(const std::vector<std::string>& prefixes) : prefixes_(prefixes) {
    for (size_t i = 0; i < prefixes_.size(); ++i) {
      const size_t len = prefixes_[i].size();
      auto it = std::find(lengths_.begin(), lengths_.end(), len);
      if (it == lengths_.end()) {
        lengths_.push_back(len);
        maps_.emplace_back();
        it = lengths_.end() - 1;
      }
      maps_[static_cast<size_t>(it - lengths_.begin())].emplace(prefixes_[i],
                                                                static_cast<uint32_t>(i));
    }
    // Longest first.
    std::vector<size_t> order(lengths_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [this](size_t a, size_t b) { return lengths_[a] > lengths_[b]; });
    std::vector<size_t> lengths;
    std::vector<std::unordered_map<std::string_view, uint32_t>> maps;
    for (size_t i : order) {
      lengths.push_back(lengths_[i]);
      maps.push_back(std::move(maps_[i]));
    }
    lengths_ = std::move(lengths);
    maps_ = std::move(maps);
  }

  uint32_t Longest(std::string_view path) const {
    for (size_t i = 0; i < lengths_.size(); ++i) {
      if (lengths_[i] > path.size()) continue;
      auto it = maps_[i].find(path.substr(0, lengths_[i]));
      if (it != maps_[i].end()) return it->second;
    }
    return UINT32_MAX;
  }

  size_t distinct_lengths() const { return lengths_.size(); }

 private:
  std::vector<std::string> prefixes_;  // owns the keys viewed by maps_
  std::vector<size_t> lengths_;
  std::vector<std::unordered_map<std::string_view, uint32_t>> maps_;
};

void PrefixBench(benchmark::State& state, bool many_lengths, bool use_trie) {
  std::mt19937 rng(7);
  const std::vector<std::string> prefixes =
      MakePrefixes(static_cast<int>(state.range(0)), many_lengths, rng);
  const std::vector<std::string> paths = MakePrefixPaths(prefixes, rng);
  std::vector<ByteTrie::Entry> entries;
  for (size_t i = 0; i < prefixes.size(); ++i) {
    entries.push_back({prefixes[i], ByteTrie::kNone, static_cast<uint32_t>(i)});
  }
  const ByteTrie trie = ByteTrie::Build(std::move(entries));
  const LengthProbe probe(prefixes);
  state.counters["lengths"] = static_cast<double>(probe.distinct_lengths());
  size_t i = 0;
  for (auto _ : state) {
    const std::string& path = paths[i++ & 1023];
    uint32_t found = UINT32_MAX;
    if (use_trie) {
      trie.Walk<false>(path, [&found](uint32_t v, size_t) {
        found = v;
        return true;
      });
    } else {
      found = probe.Longest(path);
    }
    benchmark::DoNotOptimize(found);
  }
}

void BM_PrefixLookup_Trie_FewLengths(benchmark::State& s) { PrefixBench(s, false, true); }
void BM_PrefixLookup_LengthProbe_FewLengths(benchmark::State& s) { PrefixBench(s, false, false); }
void BM_PrefixLookup_Trie_ManyLengths(benchmark::State& s) { PrefixBench(s, true, true); }
void BM_PrefixLookup_LengthProbe_ManyLengths(benchmark::State& s) { PrefixBench(s, true, false); }
BENCHMARK(BM_PrefixLookup_Trie_FewLengths)->Arg(1000)->Arg(50000);
BENCHMARK(BM_PrefixLookup_LengthProbe_FewLengths)->Arg(1000)->Arg(50000);
BENCHMARK(BM_PrefixLookup_Trie_ManyLengths)->Arg(1000)->Arg(50000);
BENCHMARK(BM_PrefixLookup_LengthProbe_ManyLengths)->Arg(1000)->Arg(50000);

}  // namespace
}  // namespace turnpike::router

BENCHMARK_MAIN();
