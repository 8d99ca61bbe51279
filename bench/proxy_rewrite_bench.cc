// proxy-rewrite's hot path:
//  - Template rendering: 1, 64 and 4,096 distinct compiled templates rendered in rotation (the
//    per-call time must stay flat: no cache to miss, nothing parsed per call), next to the
//    naive baseline of a std::string find/replace of each `$var` per call;
//  - the plugin's whole rewrite phase (uri template; regex_uri with captures into headers;
//    headers only) on a context that copies what it is handed as the proxy's does, next to the
//    naive regex_uri: the pattern compiled per call (PCRE2 without JIT) and substituted into a
//    new string each time.
#include <benchmark/benchmark.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <string>
#include <vector>

#include "plugins/proxy_rewrite/proxy_rewrite.h"
#include "turnpike/template.h"

namespace turnpike::plugins::proxy_rewrite {
namespace {

// A request's variables without a lookup structure: what the proxy's RequestContext does
// (a switch on the compiled reference) costs about as much.
class BenchVars : public RequestVars {
 public:
  std::optional<std::string_view> Get(const VarRef& var) override {
    switch (var.kind) {
      case VarRef::Kind::kBuiltin:
        switch (var.builtin) {
          case BuiltinVar::kUri:
            return uri;
          case BuiltinVar::kRealRequestUri:
            return std::string_view("/api/v1/users/42?page=2");
          case BuiltinVar::kArgs:
            return std::string_view("page=2");
          case BuiltinVar::kRemoteAddr:
            return std::string_view("10.1.2.3");
          default:
            return std::nullopt;
        }
      case VarRef::Kind::kHeader:
        if (var.name == "x-tenant") return std::string_view("acme");
        return std::nullopt;
      case VarRef::Kind::kArg:
        return std::string_view("42");
      default:
        return std::nullopt;
    }
  }
  std::string_view uri = "/api/v1/users/42";
};

// The rewrite phase's context: copies every value into reused buffers, as the proxy's does.
class BenchContext final : public PluginContext, public BenchVars {
 public:
  std::optional<std::string_view> Get(const VarRef& var) override {
    if (var.kind == VarRef::Kind::kBuiltin && var.builtin == BuiltinVar::kUri && uri_set_) {
      return std::string_view(new_uri_);
    }
    return BenchVars::Get(var);
  }
  void Respond(int, std::string_view) override {}
  void SetRequestHeader(std::string_view n, std::string_view v) override { Edit(n, v); }
  void AddRequestHeader(std::string_view n, std::string_view v) override { Edit(n, v); }
  void RemoveRequestHeader(std::string_view n) override { Edit(n, {}); }
  void SetUri(std::string_view u) override {
    new_uri_.assign(u);
    uri_set_ = true;
  }
  void SetUpstreamUri(std::string_view u) override { upstream_uri_.assign(u); }
  void SetUpstreamMethod(std::string_view m) override { method_.assign(m); }
  void SetUpstreamHost(std::string_view h) override { host_.assign(h); }
  int response_status() const override { return 200; }
  void SetResponseHeader(std::string_view, std::string_view) override {}
  void RemoveResponseHeader(std::string_view) override {}
  void MarkBodyModified() override {}
  void* FindRequestState(const void* key, const RequestStateType& type) override {
    return states_.Find(key, type);
  }
  WorkerState* FindWorkerState(const Plugin& plugin) override {
    if (state_ == nullptr) state_ = plugin.CreateWorkerState(WorkerEnvironment{});
    return state_.get();
  }
  // Between requests.
  void Next() {
    edits_ = 0;
    uri_set_ = false;
  }
  const std::string& upstream_uri() const { return upstream_uri_; }

 private:
  void Edit(std::string_view n, std::string_view v) {
    if (edits_ == names_.size()) {
      names_.emplace_back();
      values_.emplace_back();
    }
    names_[edits_].assign(n);
    values_[edits_].assign(v);
    ++edits_;
  }
  std::vector<std::string> names_, values_;
  size_t edits_ = 0;
  std::string new_uri_, upstream_uri_, method_, host_;
  bool uri_set_ = false;
  RequestStateStore states_;
  std::unique_ptr<WorkerState> state_;
};

std::string TemplateText(int i) {
  return "/v2/" + std::to_string(i) + "$uri/${http_x_tenant ?? public}/$arg_id/$remote_addr";
}

// Render one of `range(0)` compiled templates per call, in rotation.
void BM_TemplateRender(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<Template> templates;
  for (int i = 0; i < n; ++i) templates.push_back(Template::Compile(TemplateText(i)));
  BenchVars vars;
  std::string out;
  out.reserve(256);
  size_t i = 0;
  for (auto _ : state) {
    templates[i].Render(vars, &out);
    benchmark::DoNotOptimize(out.data());
    if (++i == templates.size()) i = 0;
  }
}
BENCHMARK(BM_TemplateRender)->Arg(1)->Arg(64)->Arg(4096);

// The naive baseline: the configured text copied and each `$var` found and replaced per call.
void BM_TemplateNaiveFindReplace(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<std::string> texts;
  for (int i = 0; i < n; ++i) texts.push_back(TemplateText(i));
  BenchVars vars;
  static const VarRef kUri = CompileVar("uri").value();
  static const VarRef kTenant = CompileVar("http_x_tenant").value();
  static const VarRef kArg = CompileVar("arg_id").value();
  static const VarRef kAddr = CompileVar("remote_addr").value();
  auto replace = [](std::string& s, std::string_view what, std::string_view with) {
    for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + with.size())) {
      s.replace(p, what.size(), with);
    }
  };
  size_t i = 0;
  for (auto _ : state) {
    std::string s = texts[i];
    replace(s, "${http_x_tenant ?? public}", vars.Get(kTenant).value_or("public"));
    replace(s, "$uri", vars.Get(kUri).value_or(""));
    replace(s, "$arg_id", vars.Get(kArg).value_or(""));
    replace(s, "$remote_addr", vars.Get(kAddr).value_or(""));
    benchmark::DoNotOptimize(s.data());
    if (++i == texts.size()) i = 0;
  }
}
BENCHMARK(BM_TemplateNaiveFindReplace)->Arg(1)->Arg(64)->Arg(4096);

PluginConstSharedPtr MakePlugin(const char* json) {
  StatusOr<Config> config = ParseConfig(nlohmann::json::parse(json));
  if (!config.ok()) std::abort();
  return std::make_shared<const ProxyRewritePlugin>(std::move(config).value());
}

void RunRewrite(benchmark::State& state, const char* json) {
  PluginConstSharedPtr plugin = MakePlugin(json);
  BenchContext ctx;
  for (auto _ : state) {
    ctx.Next();
    plugin->Rewrite(ctx);
    benchmark::DoNotOptimize(ctx.upstream_uri().data());
  }
}

void BM_RewriteUriTemplate(benchmark::State& state) {
  RunRewrite(state, R"({"uri": "/v2$uri/${http_x_tenant ?? public}", "host": "up.example"})");
}
BENCHMARK(BM_RewriteUriTemplate);

void BM_RewriteRegexUriWithHeaders(benchmark::State& state) {
  RunRewrite(state, R"j({"regex_uri": ["^/api/v(\\d+)/(.*)", "/internal/v$1/$2"],
      "headers": {"set": {"X-Version": "v$1", "X-Tenant": "${http_x_tenant ?? public}"},
                  "add": {"X-Client": "$remote_addr"}, "remove": ["Cookie"]}})j");
}
BENCHMARK(BM_RewriteRegexUriWithHeaders);

void BM_RewriteHeadersOnly(benchmark::State& state) {
  RunRewrite(state, R"({"headers": {"X-Api-Version": "v2", "X-Gone": ""}})");
}
BENCHMARK(BM_RewriteHeadersOnly);

// The naive baseline of regex_uri: what a gateway that compiles per request does — the pattern
// compiled on every call (no JIT), substituted once into a new string.
void BM_RegexUriNaiveCompilePerCall(benchmark::State& state) {
  const std::string pattern = "^/api/v(\\d+)/(.*)";
  const std::string replacement = "/internal/v$1/$2";
  const std::string uri = "/api/v1/users/42";
  for (auto _ : state) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   0, &error, &offset, nullptr);
    std::string out(256, '\0');
    PCRE2_SIZE len = out.size();
    int rc = pcre2_substitute(re, reinterpret_cast<PCRE2_SPTR>(uri.data()), uri.size(), 0, 0,
                              nullptr, nullptr, reinterpret_cast<PCRE2_SPTR>(replacement.data()),
                              replacement.size(), reinterpret_cast<PCRE2_UCHAR*>(out.data()), &len);
    pcre2_code_free(re);
    if (rc < 0) {
      state.SkipWithError("pcre2_substitute failed");
      break;
    }
    out.resize(len);
    out += "?page=2";
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_RegexUriNaiveCompilePerCall);

}  // namespace
}  // namespace turnpike::plugins::proxy_rewrite

BENCHMARK_MAIN();
