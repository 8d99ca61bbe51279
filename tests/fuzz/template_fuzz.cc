// Fuzz target: the templates plugins compile at load and render per request.
//
// The first byte picks what the rest is ('v', 's', 'g', 'f', 'r'; any other byte b picks
// "vsfr"[b % 4]):
//   v  a response-rewrite header value ($var, ${var}, ${var ?? default}): Template
//      compiled, rendered against a fake request; also as an access log format (nginx's
//      syntax, each escaping)
//   s  a response-rewrite filter: lines pattern, replacement ($0, ${1}, $$), option letters,
//   g  then the subject (the rest): Substitution compiled (g: gsub) and applied
//   f  a file-logger configuration (JSON; log_format with "$var" values), then optionally
//      '\0' and a request body: the log entry is formatted for a fake request
//   r  a response-rewrite configuration (JSON), then optionally '\0' and a response body:
//      the plugin is created and runs header_filter and body_filter, the body in pieces
//      split after each '\n'
//
// Checked: no crash, UB, exception or timeout; a literal template renders as its text; in
// nginx's log_format syntax, strict and lenient compiles agree and escaped values bring no
// control bytes; a file-logger entry is one line of valid JSON (an object).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "plugins/fake_plugin_context.h"
#include "plugins/file_logger/config.h"
#include "plugins/file_logger/entry.h"
#include "plugins/response_rewrite/response_rewrite.h"
#include "plugins/response_rewrite/substitution.h"
#include "support/fake_factory_context.h"
#include "turnpike/template.h"

namespace {

namespace rr = turnpike::plugins::response_rewrite;
namespace fl = turnpike::plugins::file_logger;
using turnpike::fuzz::InputReader;
using turnpike::plugins::testing::FakePluginContext;

// A request as the fake context reports it; ASCII only, so log entries stay valid JSON.
void FillRequest(FakePluginContext* ctx) {
  ctx->vars = {{"remote_addr", "10.0.0.1"},
               {"host", "a.example.com"},
               {"uri", "/a/b"},
               {"request_uri", "/a/b?x=1&y=\"q\""},
               {"args", "x=1&y=%22q%22&z"},
               {"request_method", "GET"},
               {"scheme", "http"},
               {"server_port", "9080"},
               {"route_id", "r1"},
               {"service_id", "s\\1"},
               {"upstream_addr", "127.0.0.1:1980"},
               {"request_length", "77"},
               {"bytes_sent", "12x"},
               {"arg_x", "1"},
               {"cookie_c", "\x01\x1f\t"},
               {"hostname", "h"}};
  ctx->request_headers = {{"X-Tag", "v1"}, {"Content-Type", "text/plain"}};
  ctx->response_headers = {{"Content-Length", "3"}, {"Content-Type", "text/html"}};
  ctx->status = 200;
}

void FuzzTemplate(std::string_view text) {
  for (bool captures : {false, true}) {
    turnpike::Template t = turnpike::Template::Compile(text, {.captures = captures});
    FakePluginContext ctx;
    FillRequest(&ctx);
    std::string out;
    const std::optional<std::string_view> groups[] = {"whole", std::nullopt, "one"};
    t.Render(ctx, &out, groups);
    if (t.is_literal()) {
      FUZZ_CHECK(t.literal() == text);
      FUZZ_CHECK(out == t.literal());
    }
  }
  // The access log's nginx log_format: a format the strict compile accepts renders as the
  // lenient one does, and escaped values add no control bytes (nor, escaped nginx's default
  // way, bytes outside ASCII) that the format's own text does not have.
  auto has_control = [](std::string_view s, bool high) {
    for (char c : s) {
      auto b = static_cast<unsigned char>(c);
      if (b < 0x20 || (high && b >= 0x7f)) return true;
    }
    return false;
  };
  using Escape = turnpike::Template::Escape;
  for (Escape escape : {Escape::kNone, Escape::kDefault, Escape::kJson}) {
    turnpike::Template::Options o{.nginx_syntax = true, .escape = escape, .missing = "-"};
    turnpike::StatusOr<turnpike::Template> strict = turnpike::Template::CompileStrict(text, o);
    turnpike::Template lenient = turnpike::Template::Compile(text, o);
    FakePluginContext ctx;
    FillRequest(&ctx);
    std::string out;
    lenient.Render(ctx, &out);
    if (strict.ok()) {
      std::string strict_out;
      strict.value().Render(ctx, &strict_out);
      FUZZ_CHECK(strict_out == out);
    }
    bool high = escape == Escape::kDefault;
    if (escape != Escape::kNone && !has_control(text, high)) FUZZ_CHECK(!has_control(out, high));
  }
}

void FuzzSubstitution(InputReader* in, bool global) {
  std::string_view pattern = in->Line();
  std::string_view replace = in->Line();
  std::string_view options = in->Line();
  turnpike::StatusOr<rr::Substitution> s =
      rr::Substitution::Compile(pattern, replace, options, global);
  if (!s.ok()) {
    FUZZ_CHECK(!s.status().message().empty());
    return;
  }
  std::string out;
  size_t n = s.value().Apply(in->rest(), &out);
  if (!global) FUZZ_CHECK(n <= 1);
  if (n == 0) FUZZ_CHECK(out == in->rest());
}

void FuzzLogEntry(InputReader* in) {
  nlohmann::json conf = nlohmann::json::parse(in->Until('\0'), nullptr, false);
  if (conf.is_discarded()) return;
  turnpike::StatusOr<fl::Config> config = fl::ParseConfig(conf);
  if (!config.ok()) return;
  std::string body;
  for (char c : in->rest()) {
    if (static_cast<unsigned char>(c) < 0x80) body.push_back(c);
  }
  FakePluginContext ctx;
  FillRequest(&ctx);
  fl::CollectedBodies bodies;
  if (!body.empty()) bodies.request = body;
  bodies.response = "<p>\"ok\"</p>\n";
  std::string entry;
  fl::FormatEntry(ctx, config.value(), bodies, &entry);
  FUZZ_CHECK(entry.find('\n') == std::string::npos);
  nlohmann::json parsed = nlohmann::json::parse(entry, nullptr, false);
  FUZZ_CHECK(!parsed.is_discarded());
  FUZZ_CHECK(parsed.is_object());
}

void FuzzResponseRewrite(InputReader* in) {
  nlohmann::json conf = nlohmann::json::parse(in->Until('\0'), nullptr, false);
  if (conf.is_discarded()) return;
  turnpike::StatusOr<turnpike::PluginConstSharedPtr> plugin =
      rr::ResponseRewriteFactory().Create(conf, turnpike::testing::FakeFactoryContext::Default());
  if (!plugin.ok()) return;
  std::vector<std::string> pieces;
  std::string_view body = in->rest();
  while (!body.empty()) {
    size_t nl = body.find('\n');
    size_t n = nl == std::string_view::npos ? body.size() : nl + 1;
    pieces.emplace_back(body.substr(0, n));
    body.remove_prefix(n);
  }
  if (pieces.empty()) pieces.emplace_back();
  FakePluginContext ctx;
  FillRequest(&ctx);
  for (int request = 0; request < 2; ++request) {  // a second request reuses the states
    const turnpike::Plugin& p = *plugin.value();
    if (p.phases() & turnpike::kPhaseHeaderFilter) p.HeaderFilter(ctx);
    if (p.phases() & turnpike::kPhaseBodyFilter) {
      (void)turnpike::plugins::testing::FilterBody(p, ctx, pieces);
    }
    ctx.NextRequest();
    ctx.status = 404;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  InputReader in(turnpike::fuzz::AsText(data, size));
  if (in.empty()) return 0;
  char mode = static_cast<char>(in.Byte());
  if (mode != 'v' && mode != 's' && mode != 'g' && mode != 'f' && mode != 'r') {
    mode = "vsfr"[static_cast<unsigned char>(mode) % 4];
  }
  switch (mode) {
    case 'v':
      FuzzTemplate(in.rest());
      break;
    case 's':
    case 'g':
      FuzzSubstitution(&in, mode == 'g');
      break;
    case 'f':
      FuzzLogEntry(&in);
      break;
    default:
      FuzzResponseRewrite(&in);
      break;
  }
  return 0;
}
