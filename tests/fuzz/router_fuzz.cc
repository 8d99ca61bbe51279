// Fuzz target: RouteTable::Build and Match in all three router modes, with LinearRouteMatcher
// (the naive reading of the same precedence rules) as the oracle, as tests/router does.
//
// Input (text):
//   byte 0        mode = byte % 3 (host_uri, uri, uri_with_parameter); byte / 3 % 8 != 0
//                 salts a route filter (accepts or rejects as a hash of its arguments)
//   route lines   up to a line "--": space-separated tokens, a token starting with '/' or
//                 "u:" is a uri, "h:" a host, "m:" a method (GET, POST...), "p:" a priority,
//                 "f" asks the filter
//   request lines "METHOD host path" (host "-": none; the path is the rest of the line)
//
// Checked: no crash, UB or timeout; a match's payload, uri, host and parameters belong to
// the winning route and the request; and the result equals the oracle's, except where the
// oracle does not model RouteTable (kMaxPathRests) or would backtrack too long (param mode
// with many '*'/':' against long paths).
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/http_method.h"
#include "fuzz/fuzz_util.h"
#include "router/linear_route_matcher.h"
#include "router/pattern.h"
#include "router/route_table.h"

namespace {

using turnpike::fuzz::InputReader;
using turnpike::fuzz::Within;
namespace base = turnpike::base;
namespace router = turnpike::router;

constexpr size_t kMaxRoutes = 64;
constexpr size_t kMaxPatterns = 8;  // uris and hosts per route
constexpr size_t kMaxRequests = 64;
// The oracle's backtracking costs about |path|^k for k wildcards; keep it bounded.
constexpr size_t kOracleMaxWildcards = 3;
constexpr size_t kOracleMaxPath = 64;

class HashFilter final : public router::RouteFilter {
 public:
  explicit HashFilter(uint32_t salt) : salt_(salt) {}
  bool Accept(uint32_t payload, const router::PathParams& params) override {
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

// Space-separated tokens of `line`, empty ones skipped.
std::vector<std::string_view> Tokens(std::string_view line) {
  std::vector<std::string_view> out;
  while (!line.empty()) {
    size_t sp = line.find(' ');
    if (sp != 0) out.push_back(line.substr(0, sp));
    if (sp == std::string_view::npos) break;
    line.remove_prefix(sp + 1);
  }
  return out;
}

router::RouteKey ParseRoute(std::string_view line, uint32_t payload) {
  router::RouteKey key;
  key.payload = payload;
  for (std::string_view t : Tokens(line)) {
    if (t[0] == '/') {
      if (key.uris.size() < kMaxPatterns) key.uris.emplace_back(t);
    } else if (t.starts_with("u:")) {
      if (key.uris.size() < kMaxPatterns) key.uris.emplace_back(t.substr(2));
    } else if (t.starts_with("h:")) {
      if (key.hosts.size() < kMaxPatterns) key.hosts.emplace_back(t.substr(2));
    } else if (t.starts_with("m:")) {
      if (std::optional<base::Method> m = base::ParseRouteMethod(t.substr(2))) {
        key.methods = key.methods == base::kAnyMethod ? 0 : key.methods;
        key.methods |= base::MaskOf(*m);
      }
    } else if (t.starts_with("p:")) {
      std::string_view v = t.substr(2);
      int p = 0;
      std::from_chars(v.data(), v.data() + v.size(), p);
      key.priority = p;
    } else if (t == "f") {
      key.has_filter = true;
    }
  }
  if (key.uris.empty()) key.uris.emplace_back("/");
  return key;
}

size_t Wildcards(std::string_view uri) {
  size_t n = 0;
  for (char c : uri) n += c == '*' || c == ':';
  return n;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
  return out;
}

bool SameParams(const router::PathParams& a, const router::PathParams& b) {
  if (a.count != b.count) return false;
  for (size_t i = 0; i < a.count; ++i) {
    if (a.names[i] != b.names[i] || a.values[i] != b.values[i]) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  InputReader in(turnpike::fuzz::AsText(data, size));
  const uint8_t ctrl = in.Byte();
  const auto mode = static_cast<router::Mode>(ctrl % 3);
  const uint32_t salt = ctrl / 3 % 8;

  std::vector<router::RouteKey> keys;
  bool oracle_models_all = true;  // no uri beyond what the oracle models cheaply
  while (!in.empty() && keys.size() < kMaxRoutes) {
    std::string_view line = in.Line();
    if (line == "--") break;
    keys.push_back(ParseRoute(line, static_cast<uint32_t>(keys.size())));
    for (const std::string& uri : keys.back().uris) {
      if (Wildcards(uri) > kOracleMaxWildcards) oracle_models_all = false;
    }
  }
  if (mode != router::Mode::kUriWithParameter) oracle_models_all = true;

  router::RouteTableConstSharedPtr table = router::RouteTable::Build(keys, mode);
  FUZZ_CHECK(table->size() == keys.size());
  const router::LinearRouteMatcher linear(keys, mode);
  HashFilter filter(salt);
  router::RouteFilter* f = salt != 0 ? &filter : nullptr;

  for (size_t q = 0; q < kMaxRequests && !in.empty(); ++q) {
    std::string_view line = in.Line();
    size_t sp1 = line.find(' ');
    std::string_view method_name = line.substr(0, sp1);
    line.remove_prefix(sp1 == std::string_view::npos ? line.size() : sp1 + 1);
    size_t sp2 = line.find(' ');
    std::string_view host_text = line.substr(0, sp2);
    std::string_view path = sp2 == std::string_view::npos ? "/" : line.substr(sp2 + 1);
    const std::string host = host_text == "-" ? std::string() : Lower(host_text);

    router::MatchRequest req{base::ParseMethod(method_name), host, path};
    router::PathParams params;
    router::MatchInfo info;
    const uint32_t got = table->Match(req, f, &params, &info);
    if (got == router::RouteTable::kNoMatch) {
      FUZZ_CHECK(params.count == 0);
      FUZZ_CHECK(info.matched_uri.empty() && info.matched_host.empty());
    } else {
      FUZZ_CHECK(got < keys.size());
      const router::RouteKey& k = keys[got];
      FUZZ_CHECK((k.methods & base::MaskOf(req.method)) != 0);
      bool uri_known = false;
      for (const std::string& uri : k.uris) uri_known = uri_known || uri == info.matched_uri;
      FUZZ_CHECK(uri_known);
      if (!info.matched_host.empty()) {
        bool host_known = false;
        for (const std::string& h : k.hosts)
          host_known = host_known || Lower(h) == info.matched_host;
        FUZZ_CHECK(host_known);
      }
      FUZZ_CHECK(params.count <= router::PathParams::kMax);
      for (size_t i = 0; i < params.count; ++i) FUZZ_CHECK(Within(params.values[i], path));
      if (mode != router::Mode::kUriWithParameter) FUZZ_CHECK(params.count == 0);
    }
    // The short form agrees when there is no filter.
    if (f == nullptr) FUZZ_CHECK(table->Match(req.method, req.host, req.path) == got);

    if (!oracle_models_all) continue;
    if (mode == router::Mode::kUriWithParameter && path.size() > kOracleMaxPath) continue;
    router::PathParams want_params;
    router::MatchInfo want_info;
    const uint32_t want = linear.Match(req, f, &want_params, &want_info);
    FUZZ_CHECK(got == want);
    FUZZ_CHECK(SameParams(params, want_params));
    FUZZ_CHECK(info.matched_uri == want_info.matched_uri);
    FUZZ_CHECK(info.matched_host == want_info.matched_host);
  }
  return 0;
}
