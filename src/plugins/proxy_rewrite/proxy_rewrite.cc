#include "plugins/proxy_rewrite/proxy_rewrite.h"

#include "turnpike/strings.h"

namespace turnpike::plugins::proxy_rewrite {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";

// nginx's NGX_ESCAPE_URI table (ngx_escape_uri): one bit per byte that is escaped.
struct UriEscapeTable {
  bool escape[256] = {};
  constexpr UriEscapeTable() {
    for (int c = 0; c <= 0x20; ++c) escape[c] = true;
    escape[static_cast<unsigned char>('#')] = true;
    escape[static_cast<unsigned char>('%')] = true;
    escape[static_cast<unsigned char>('?')] = true;
    for (int c = 0x7f; c < 256; ++c) escape[c] = true;
  }
};
constexpr UriEscapeTable kUriEscape;

void AppendEscaped(std::string* out, unsigned char c) {
  const char esc[3] = {'%', kHex[c >> 4], kHex[c & 0xf]};
  out->append(esc, sizeof(esc));
}

VarRef Builtin(BuiltinVar v) {
  VarRef r;
  r.kind = VarRef::Kind::kBuiltin;
  r.builtin = v;
  r.source = std::string(BuiltinVarName(v));
  return r;
}

}  // namespace

void AppendUriSafe(std::string* out, std::string_view path) {
  size_t run = 0;
  for (size_t i = 0; i < path.size(); ++i) {
    const auto c = static_cast<unsigned char>(path[i]);
    if (!kUriEscape.escape[c]) continue;
    out->append(path.data() + run, i - run);
    AppendEscaped(out, c);
    run = i + 1;
  }
  out->append(path.data() + run, path.size() - run);
}

void AppendControlsEscaped(std::string* out, std::string_view s) {
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != 0x7f) continue;
    out->append(s.data() + run, i - run);
    AppendEscaped(out, c);
    run = i + 1;
  }
  out->append(s.data() + run, s.size() - run);
}

ProxyRewriteWorker::ProxyRewriteWorker(uint32_t max_captures) {
  match.Reserve(max_captures);
  captures.reserve(max_captures + 1);
  subject.reserve(256);
  rewritten.reserve(256);
  scratch.reserve(256);
  target.reserve(256);
}

ProxyRewritePlugin::ProxyRewritePlugin(Config config)
    : config_(std::move(config)),
      uri_(Builtin(BuiltinVar::kUri)),
      real_request_uri_(Builtin(BuiltinVar::kRealRequestUri)),
      args_(Builtin(BuiltinVar::kArgs)) {
  if (config_.has_uri && config_.uri.is_literal() && !config_.use_real_request_uri_unsafe) {
    // Steps 2 and 3 give the same target for every request: made here, once.
    const std::string_view uri = config_.uri.literal();
    const size_t q = uri.find('?');
    std::string target;
    AppendUriSafe(&target, uri.substr(0, q));
    if (q != std::string_view::npos) AppendControlsEscaped(&target, uri.substr(q));
    literal_target_ = std::move(target);
    literal_has_query_ = q != std::string_view::npos;
  }
}

std::unique_ptr<WorkerState> ProxyRewritePlugin::CreateWorkerState(
    const WorkerEnvironment& /*env*/) const {
  return std::make_unique<ProxyRewriteWorker>(config_.max_captures);
}

bool ProxyRewritePlugin::ApplyRegex(PluginContext& ctx, std::string_view subject,
                                    ProxyRewriteWorker& w) const {
  for (const RegexRule& rule : config_.regex_uri) {
    const Regex::Result r = rule.pattern.Search(subject, &w.match);
    if (r == Regex::kNoMatch) continue;
    if (r == Regex::kError) {
      // APISIX answers 500 {"error_msg": "failed to match the uri ..."}; a PCRE2 limit is the
      // one runtime failure left once patterns compiled.
      std::string body = "{\"error_msg\":\"";
      AppendJsonEscaped(&body, "failed to match the uri ");
      AppendJsonEscaped(&body, subject);
      AppendJsonEscaped(&body, " (" + rule.pattern_text + ")  : pcre2 match failed");
      body += "\"}\n";
      ctx.Respond(500, body);
      return false;
    }
    w.captures.clear();
    for (uint32_t i = 0; i < w.match.size(); ++i) w.captures.push_back(w.match.group(i));
    rule.replacement.Render(ctx, &w.scratch, w.captures);
    // ngx.re.sub: the match is replaced, what is around it stays.
    const std::string_view whole = *w.match.group(0);
    const size_t from = static_cast<size_t>(whole.data() - subject.data());
    w.rewritten.assign(subject.substr(0, from));
    w.rewritten.append(w.scratch);
    w.rewritten.append(subject.substr(from + whole.size()));
    return true;
  }
  w.rewritten.assign(subject);
  return true;
}

PhaseResult ProxyRewritePlugin::Rewrite(PluginContext& ctx) const {
  auto& w = ctx.worker_state<ProxyRewriteWorker>(*this);
  w.captures.clear();
  if (!config_.host.empty()) ctx.SetUpstreamHost(config_.host);

  if (literal_target_) {
    SendTarget(ctx, w, *literal_target_, literal_has_query_);
    ApplyHeaders(ctx, w);
    if (!config_.method.empty()) ctx.SetUpstreamMethod(config_.method);
    return PhaseResult::kContinue;
  }

  const bool unsafe = config_.use_real_request_uri_unsafe;
  // A copy: the captures view it until the headers are rendered, and SetUri() below may
  // replace the buffer $uri reads from (another proxy-rewrite instance set it before).
  w.subject.assign(ctx.Get(unsafe ? real_request_uri_ : uri_).value_or(std::string_view()));
  const std::string_view start = w.subject;
  // Whether a '?' in the rewritten URI starts a query that the configuration wrote (the
  // template's own text, or a replacement's when $uri itself has none: a '?' from $uri is a
  // decoded %3F, part of the path).
  bool query_is_ours = false;
  if (config_.has_uri) {
    query_is_ours = true;
    config_.uri.Render(ctx, &w.rewritten);
    if (unsafe) {
      const size_t q = start.find('?');
      if (q != std::string_view::npos) {
        const bool has_query = w.rewritten.find('?') != std::string::npos;
        w.rewritten.push_back(has_query ? '&' : '?');
        w.rewritten.append(start.substr(q + 1));
      }
    }
  } else if (!config_.regex_uri.empty()) {
    query_is_ours = start.find('?') == std::string_view::npos;
    if (!ApplyRegex(ctx, start, w)) return PhaseResult::kRespond;
  } else {
    w.rewritten.assign(start);
  }

  if (unsafe) {
    ctx.SetUpstreamUri(w.rewritten);
  } else {
    const size_t q = query_is_ours ? w.rewritten.find('?') : std::string::npos;
    const std::string_view rewritten = w.rewritten;
    w.target.clear();
    AppendUriSafe(&w.target, rewritten.substr(0, q));
    if (q != std::string::npos) AppendControlsEscaped(&w.target, rewritten.substr(q));
    SendTarget(ctx, w, w.target, q != std::string::npos);
  }

  ApplyHeaders(ctx, w);
  if (!config_.method.empty()) ctx.SetUpstreamMethod(config_.method);
  return PhaseResult::kContinue;
}

void ProxyRewritePlugin::SendTarget(PluginContext& ctx, ProxyRewriteWorker& w,
                                    std::string_view target, bool has_query) const {
  ctx.SetUri(target);
  const std::string_view args = ctx.Get(args_).value_or(std::string_view());
  if (args.empty()) {
    ctx.SetUpstreamUri(target);
    return;
  }
  // $is_args: the client's query after the target's own ('&') or as the query ('?').
  if (target.data() != w.target.data()) w.target.assign(target);
  w.target.push_back(has_query ? '&' : '?');
  w.target.append(args);
  ctx.SetUpstreamUri(w.target);
}

void ProxyRewritePlugin::ApplyHeaders(PluginContext& ctx, ProxyRewriteWorker& w) const {
  // APISIX's code order: add, set, remove.
  for (const HeaderRule& rule : config_.add) {
    for (const Template& value : rule.values) {
      value.Render(ctx, &w.scratch, w.captures);
      ctx.AddRequestHeader(rule.name, w.scratch);
    }
  }
  for (const HeaderRule& rule : config_.set) {
    // A scalar rendering to "" removes the header (ngx.req.set_header with ""); an array sets
    // its values as lines of their own, empty ones left out.
    bool first = true;
    for (const Template& value : rule.values) {
      value.Render(ctx, &w.scratch, w.captures);
      if (w.scratch.empty()) continue;
      if (first) {
        ctx.SetRequestHeader(rule.name, w.scratch);
      } else {
        ctx.AddRequestHeader(rule.name, w.scratch);
      }
      first = false;
    }
    if (first) ctx.RemoveRequestHeader(rule.name);
  }
  for (const std::string& name : config_.remove) ctx.RemoveRequestHeader(name);
}

}  // namespace turnpike::plugins::proxy_rewrite
