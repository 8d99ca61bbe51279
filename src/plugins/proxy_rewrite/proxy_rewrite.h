// proxy-rewrite: runtime part. rewrite phase (priority 1008), reference §4.2 and APISIX's
// proxy-rewrite.lua as the code runs it:
//
//  1. start from $uri (the normalized path), or the raw request target with
//     use_real_request_uri_unsafe;
//  2. `uri`: its template, `?` in substituted values as %3F (unsafe mode appends the client's
//     query, with `&` when the template made one); else `regex_uri`: the first pattern that
//     matches replaces its match (once) with its replacement, and its groups become $N in
//     header values; no match leaves the URI as it was; a PCRE2 failure answers 500;
//  3. unless unsafe: the path is re-encoded as nginx's ngx_escape_uri (NGX_ESCAPE_URI) does
//     (bytes up to 0x20, `#`, `%`, `?`, 0x7f and above as %XX), a query the template or the
//     replacement wrote (after its first `?`) keeps its bytes but its control bytes; that is the
//     new $uri (PluginContext::SetUri); then the client's query is appended, with `&` or `?`;
//  4. the result is the upstream target ($upstream_uri); `host` and `method` go upstream too;
//  5. headers: add, then set (a value rendering to "" removes the header), then remove.
//
// Cost per request: one template render or one PCRE2 (JIT) match plus one replacement render,
// one pass over the URI to encode it (none of the three for a `uri` without variables, whose
// target is encoded at load), one render per header value; all into this worker's
// buffers (ProxyRewriteWorker), so a warm request allocates nothing.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/proxy_rewrite/config.h"
#include "turnpike/plugin.h"
#include "turnpike/regex.h"
#include "turnpike/typed_factory.h"
#include "turnpike/worker_state.h"

namespace turnpike::plugins::proxy_rewrite {

// What one worker reuses from request to request.
struct ProxyRewriteWorker final : WorkerState {
  explicit ProxyRewriteWorker(uint32_t max_captures);
  RegexMatch match;
  std::vector<std::optional<std::string_view>> captures;  // of the pattern that matched
  std::string subject;    // $uri (or the raw target) as the request came in
  std::string rewritten;  // the URI after uri / regex_uri, before encoding
  std::string scratch;    // a replacement's or a header value's rendering
  std::string target;     // the upstream target
};

// Appends `path` encoded as nginx's ngx_escape_uri(..., NGX_ESCAPE_URI) (APISIX's
// core.utils.uri_safe_encode): bytes up to 0x20, '#', '%', '?', 0x7f and above as %XX
// (uppercase hex). Any thread.
void AppendUriSafe(std::string* out, std::string_view path);
// Appends `s` with only its control bytes (below 0x20, 0x7f) as %XX (APISIX's
// core.utils.escape_uri_control_chars).
void AppendControlsEscaped(std::string* out, std::string_view s);

class ProxyRewritePlugin final : public Plugin {
 public:
  explicit ProxyRewritePlugin(Config config);
  uint32_t phases() const override { return kPhaseRewrite; }
  PhaseResult Rewrite(PluginContext& ctx) const override;

  bool has_worker_state() const override { return true; }
  std::unique_ptr<WorkerState> CreateWorkerState(const WorkerEnvironment& env) const override;

  const Config& config() const { return config_; }

 private:
  // Step 2 for regex_uri: the rewritten URI into w.rewritten and the groups into w.captures;
  // false after answering 500.
  bool ApplyRegex(PluginContext& ctx, std::string_view subject, ProxyRewriteWorker& w) const;
  void ApplyHeaders(PluginContext& ctx, ProxyRewriteWorker& w) const;
  // Step 3's end: `target` (encoded; `has_query`: it has a query of its own) is the new $uri,
  // and with the client's query appended, the upstream target. `target` may be w.target.
  void SendTarget(PluginContext& ctx, ProxyRewriteWorker& w, std::string_view target,
                  bool has_query) const;

  Config config_;
  VarRef uri_, real_request_uri_, args_;
  // A `uri` without variables (and not unsafe): the encoded target, made at load; the
  // client's query is the only part left to append per request.
  std::optional<std::string> literal_target_;
  bool literal_has_query_ = false;
};

class ProxyRewriteFactory final
    : public TypedPluginFactory<ProxyRewriteFactory, Config, ProxyRewritePlugin> {
 public:
  static constexpr std::string_view kName = "proxy-rewrite";
  static constexpr int kPriority = 1008;
  static constexpr auto kParseConfig = &ParseConfig;
};

}  // namespace turnpike::plugins::proxy_rewrite
