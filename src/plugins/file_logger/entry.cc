#include "plugins/file_logger/entry.h"

#include <array>
#include <charconv>

#include "turnpike/strings.h"

namespace turnpike::plugins::file_logger {
namespace {

void AppendJsonStringLower(std::string* out, std::string_view s) {
  out->push_back('"');
  size_t start = out->size();
  AppendJsonString(out, s);
  // AppendJsonString added its own quotes: drop them, lowercase what is between.
  out->erase(start, 1);
  out->pop_back();
  for (size_t i = start; i < out->size(); ++i) (*out)[i] = AsciiLower((*out)[i]);
  out->push_back('"');
}

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, static_cast<size_t>(p - buf));
}

// A decimal string as a JSON number when it is one (nginx variables are text).
void AppendNumberOrString(std::string* out, std::string_view s) {
  bool digits = !s.empty() && s.size() < 19;
  for (char c : s) digits = digits && c >= '0' && c <= '9';
  if (digits) {
    out->append(s);
  } else {
    AppendJsonString(out, s);
  }
}

// ngx.unescape_uri for query arguments: %XX decoded, '+' is a space.
void Unescape(std::string_view in, std::string* out) {
  out->clear();
  AppendFormUnescaped(out, in);
}

std::string_view Or(std::optional<std::string_view> v, std::string_view fallback = {}) {
  return v ? *v : fallback;
}

void Key(std::string* out, bool* first, std::string_view key) {
  if (!*first) out->push_back(',');
  *first = false;
  AppendJsonString(out, key);
  out->push_back(':');
}

// ngx.req.get_uri_args(): decoded names; "a" -> true, "a=" -> ""; repeats -> arrays. At most
// 100 arguments, as OpenResty's default.
void WriteQueryArgs(std::string* out, std::string_view query, EntryScratch* scratch) {
  constexpr size_t kMax = 100;
  std::array<std::string_view, kMax> pairs;
  size_t n = 0;
  while (!query.empty() && n < kMax) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    if (!pair.empty() && pair[0] != '=') pairs[n++] = pair;
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  std::string& key = scratch->key;
  std::string& other = scratch->other;
  std::string& value = scratch->value;
  auto raw_key = [](std::string_view pair) { return pair.substr(0, pair.find('=')); };
  auto write_value = [&](std::string_view pair) {
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      out->append("true");
      return;
    }
    Unescape(pair.substr(eq + 1), &value);
    AppendJsonString(out, value);
  };
  out->push_back('{');
  bool first = true;
  for (size_t i = 0; i < n; ++i) {
    Unescape(raw_key(pairs[i]), &key);
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j) {
      Unescape(raw_key(pairs[j]), &other);
      seen = other == key;
    }
    if (seen) continue;
    size_t count = 1;
    for (size_t j = i + 1; j < n; ++j) {
      Unescape(raw_key(pairs[j]), &other);
      if (other == key) ++count;
    }
    Key(out, &first, key);
    if (count == 1) {
      write_value(pairs[i]);
      continue;
    }
    out->push_back('[');
    bool first_item = true;
    for (size_t j = i; j < n; ++j) {
      Unescape(raw_key(pairs[j]), &other);
      if (other != key) continue;
      if (!first_item) out->push_back(',');
      first_item = false;
      write_value(pairs[j]);
    }
    out->push_back(']');
  }
  out->push_back('}');
}

// ngx.req.get_headers() / ngx.resp.get_headers(): lowercased names; repeats -> arrays.
void WriteHeaders(std::string* out, const PluginContext& ctx,
                  void (PluginContext::*visit)(HeaderVisitor&) const) {
  constexpr size_t kMax = 100;
  std::array<std::pair<std::string_view, std::string_view>, kMax> headers;
  size_t n = 0;
  ForEachHeader(ctx, visit, [&](std::string_view name, std::string_view value) {
    if (n < kMax) headers[n++] = {name, value};
  });
  out->push_back('{');
  bool first = true;
  for (size_t i = 0; i < n; ++i) {
    bool seen = false;
    const std::string_view name = headers[i].first;
    for (size_t j = 0; j < i && !seen; ++j) seen = EqualsIgnoreCase(headers[j].first, name);
    if (seen) continue;
    size_t count = 1;
    for (size_t j = i + 1; j < n; ++j) count += EqualsIgnoreCase(headers[j].first, name);
    if (!first) out->push_back(',');
    first = false;
    AppendJsonStringLower(out, name);
    out->push_back(':');
    if (count == 1) {
      AppendJsonString(out, headers[i].second);
      continue;
    }
    out->push_back('[');
    bool first_item = true;
    for (size_t j = i; j < n; ++j) {
      if (!EqualsIgnoreCase(headers[j].first, name)) continue;
      if (!first_item) out->push_back(',');
      first_item = false;
      AppendJsonString(out, headers[j].second);
    }
    out->push_back(']');
  }
  out->push_back('}');
}

void WriteFormat(std::string* out, bool* first, PluginContext& ctx,
                 const std::vector<FormatField>& format, const CollectedBodies& bodies,
                 bool skip_route_keys);

// Writes one field of a log_format into the object being written. A field whose variable is
// nil is left out, as a nil in a Lua table is.
void WriteField(std::string* out, bool* first, PluginContext& ctx, const FormatField& f,
                const CollectedBodies& bodies) {
  std::optional<std::string_view> text;
  switch (f.kind) {
    case FormatField::Kind::kVar:
      text = ctx.Get(f.var);
      if (!text) return;
      break;
    case FormatField::Kind::kUnknownVar:
      return;
    case FormatField::Kind::kRequestBody:
      text = bodies.request;
      if (!text) return;
      break;
    case FormatField::Kind::kLiteral:
    case FormatField::Kind::kObject:
      break;
  }
  if (!*first) out->push_back(',');
  *first = false;
  out->append(f.key_json);
  out->push_back(':');
  if (text) {
    AppendJsonString(out, *text);
  } else if (f.kind == FormatField::Kind::kLiteral) {
    out->append(f.literal);
  } else {
    out->push_back('{');
    bool inner_first = true;
    WriteFormat(out, &inner_first, ctx, f.children, bodies, false);
    out->push_back('}');
  }
}

void WriteFormat(std::string* out, bool* first, PluginContext& ctx,
                 const std::vector<FormatField>& format, const CollectedBodies& bodies,
                 bool skip_route_keys) {
  for (const FormatField& f : format) {
    if (skip_route_keys && (f.key == "route_id" || f.key == "service_id")) continue;
    WriteField(out, first, ctx, f, bodies);
  }
}

void WriteCustom(PluginContext& ctx, const Config& config, const CollectedBodies& bodies,
                 std::string* out) {
  const EntryVars& vars = config.vars;
  std::optional<std::string_view> route_id = ctx.Get(vars.route_id);
  out->push_back('{');
  bool first = true;
  // get_custom_format_log then sets route_id and service_id from the matched route.
  WriteFormat(out, &first, ctx, *config.log_format, bodies, route_id.has_value());
  if (route_id) {
    if (std::optional<std::string_view> service_id = ctx.Get(vars.service_id)) {
      Key(out, &first, "service_id");
      AppendJsonString(out, *service_id);
    }
    Key(out, &first, "route_id");
    AppendJsonString(out, *route_id);
  }
  out->push_back('}');
}

void WriteFull(PluginContext& ctx, const Config& config, const CollectedBodies& bodies,
               EntryScratch* scratch, std::string* out) {
  const EntryVars& vars = config.vars;
  std::optional<std::string_view> route_id = ctx.Get(vars.route_id);
  RequestTiming timing = ctx.timing();

  out->append("{\"request\":{\"url\":");
  {
    // scheme://host:server_port + request_uri, built in a reused buffer.
    std::string& url = scratch->url;
    url.assign(Or(ctx.Get(vars.scheme), "http"));
    url.append("://");
    url.append(Or(ctx.Get(vars.host)));
    url.push_back(':');
    url.append(Or(ctx.Get(vars.server_port)));
    url.append(Or(ctx.Get(vars.request_uri)));
    AppendJsonString(out, url);
  }
  out->append(",\"uri\":");
  AppendJsonString(out, Or(ctx.Get(vars.request_uri)));
  out->append(",\"method\":");
  AppendJsonString(out, Or(ctx.Get(vars.request_method)));
  out->append(",\"headers\":");
  WriteHeaders(out, ctx, &PluginContext::VisitRequestHeaders);
  out->append(",\"querystring\":");
  WriteQueryArgs(out, Or(ctx.Get(vars.args)), scratch);
  if (std::optional<std::string_view> size = ctx.Get(vars.request_length)) {
    out->append(",\"size\":");
    AppendNumberOrString(out, *size);
  }
  if (bodies.request) {
    out->append(",\"body\":");
    AppendJsonString(out, *bodies.request);
  }
  out->append("},\"response\":{\"status\":");
  AppendInt(out, ctx.response_status());
  out->append(",\"headers\":");
  WriteHeaders(out, ctx, &PluginContext::VisitResponseHeaders);
  if (std::optional<std::string_view> size = ctx.Get(vars.bytes_sent)) {
    out->append(",\"size\":");
    AppendNumberOrString(out, *size);
  }
  if (bodies.response) {
    out->append(",\"body\":");
    AppendJsonString(out, *bodies.response);
  }
  out->append("},\"server\":{\"hostname\":");
  AppendJsonString(out, Or(ctx.Get(vars.hostname)));
  out->append(",\"version\":");
  AppendJsonString(out, TURNPIKE_VERSION);
  out->push_back('}');
  if (std::optional<std::string_view> addr = ctx.Get(vars.upstream_addr)) {
    out->append(",\"upstream\":");
    AppendJsonString(out, *addr);
  }
  out->append(",\"service_id\":");
  if (route_id) {
    AppendJsonString(out, Or(ctx.Get(vars.service_id)));
    out->append(",\"route_id\":");
    AppendJsonString(out, *route_id);
  } else {
    AppendJsonString(out, Or(ctx.Get(vars.host)));  // log-util: no route -> the host
  }
  out->append(",\"client_ip\":");
  AppendJsonString(out, Or(ctx.Get(vars.remote_addr)));
  out->append(",\"start_time\":");
  AppendInt(out, timing.start_ms);
  if (timing.latency_ms >= 0) {
    out->append(",\"latency\":");
    AppendInt(out, timing.latency_ms);
    int64_t apisix = timing.latency_ms;
    if (timing.upstream_ms >= 0) {
      out->append(",\"upstream_latency\":");
      AppendInt(out, timing.upstream_ms);
      apisix = apisix > timing.upstream_ms ? apisix - timing.upstream_ms : 0;
    }
    out->append(",\"apisix_latency\":");
    AppendInt(out, apisix);
  }
  if (!config.log_format_extra.empty()) {
    // Extra fields never replace a default one.
    static constexpr std::string_view kDefaultKeys[] = {
        "request",  "response",  "server",     "upstream", "service_id",       "route_id",
        "consumer", "client_ip", "start_time", "latency",  "upstream_latency", "apisix_latency"};
    bool first = false;
    for (const FormatField& f : config.log_format_extra) {
      bool taken = false;
      for (std::string_view k : kDefaultKeys) taken = taken || k == f.key;
      if (!taken) WriteField(out, &first, ctx, f, bodies);
    }
  }
  out->push_back('}');
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  AppendJsonEscaped(out, s, /*escape_del=*/true);
  out->push_back('"');
}

void FormatEntry(PluginContext& ctx, const Config& config, const CollectedBodies& bodies,
                 EntryScratch* scratch, std::string* out) {
  if (config.log_format) {
    WriteCustom(ctx, config, bodies, out);
  } else {
    WriteFull(ctx, config, bodies, scratch, out);
  }
}

void FormatEntry(PluginContext& ctx, const Config& config, const CollectedBodies& bodies,
                 std::string* out) {
  EntryScratch scratch;
  FormatEntry(ctx, config, bodies, &scratch, out);
}

}  // namespace turnpike::plugins::file_logger
