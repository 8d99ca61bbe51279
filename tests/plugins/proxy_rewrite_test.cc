// proxy-rewrite: its schema errors, the URI it computes (APISIX's t/plugin/proxy-rewrite*.t
// cases among them), regex_uri captures in headers, the header edit order and templates.
#include "plugins/proxy_rewrite/proxy_rewrite.h"

#include <gtest/gtest.h>

#include <string>

#include "plugins/fake_plugin_context.h"
#include "support/fake_factory_context.h"

namespace turnpike::plugins::proxy_rewrite {
namespace {

using testing::FakePluginContext;

FactoryContext& TestContext() { return turnpike::testing::FakeFactoryContext::Default(); }

PluginConstSharedPtr Make(const std::string& json) {
  StatusOr<PluginConstSharedPtr> p =
      ProxyRewriteFactory().Create(nlohmann::json::parse(json), TestContext());
  EXPECT_TRUE(p.ok()) << json << ": " << p.status().message();
  return p.ok() ? p.value() : nullptr;
}

std::string Error(const std::string& json) {
  StatusOr<PluginConstSharedPtr> p =
      ProxyRewriteFactory().Create(nlohmann::json::parse(json), TestContext());
  EXPECT_FALSE(p.ok()) << json;
  return p.ok() ? "" : p.status().message();
}

// Makes `ctx` a new request for `uri` ($uri, decoded) with raw target `raw` and query `args`
// (and a new worker: the plugin under test may differ from the last one).
void Reset(FakePluginContext& ctx, std::string uri, std::string raw = "", std::string args = "") {
  ctx.NextRequest();
  ctx.worker_states.clear();
  ctx.vars.clear();
  ctx.request_headers.clear();
  ctx.vars["uri"] = uri;
  ctx.vars["real_request_uri"] = raw.empty() ? uri : raw;
  if (!args.empty()) ctx.vars["args"] = args;
}

// The upstream target `json` gives a request (see Reset()).
std::string Target(const std::string& json, std::string uri, std::string raw = "",
                   std::string args = "") {
  PluginConstSharedPtr p = Make(json);
  if (p == nullptr) return "<no plugin>";
  FakePluginContext ctx;
  Reset(ctx, std::move(uri), std::move(raw), std::move(args));
  EXPECT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  return ctx.upstream_uri.value_or("<unset>");
}

TEST(ProxyRewriteConfigTest, SchemaErrorsNameTheField) {
  EXPECT_EQ(Error(R"j({})j"), "expect object to have at least 1 properties");
  EXPECT_EQ(Error(R"j({"uri": 3})j"),
            "property \"uri\" validation failed: wrong type: expected string, got number");
  EXPECT_EQ(Error(R"j({"uri": ""})j"),
            "property \"uri\" validation failed: string too short, expected at least 1, got 0");
  EXPECT_EQ(Error(R"j({"uri": "/)j" + std::string(4096, 'a') + R"j("})j"),
            "property \"uri\" validation failed: string too long, expected at most 4096, got "
            "4097");
  EXPECT_EQ(Error(R"j({"uri": "plain"})j"),
            "property \"uri\" validation failed: failed to match pattern \"^\\\\/.*\" with "
            "\"plain\"");
  EXPECT_EQ(Error(R"j({"method": "GETS"})j"),
            "property \"method\" validation failed: matches none of the enum values");
  EXPECT_EQ(Error(R"j({"method": 1})j"),
            "property \"method\" validation failed: wrong type: expected string, got number");
  EXPECT_EQ(Error(R"j({"host": "a b"})j"),
            "property \"host\" validation failed: failed to match pattern "
            "\"^[0-9a-zA-Z-.]+(:\\d{1,5})?$\" with \"a b\"");
  EXPECT_EQ(Error(R"j({"host": "a:123456"})j"),
            "property \"host\" validation failed: failed to match pattern "
            "\"^[0-9a-zA-Z-.]+(:\\d{1,5})?$\" with \"a:123456\"");
  EXPECT_EQ(Error(R"j({"use_real_request_uri_unsafe": "yes"})j"),
            "property \"use_real_request_uri_unsafe\" validation failed: wrong type: expected "
            "boolean, got string");
}

TEST(ProxyRewriteConfigTest, RegexUriErrors) {
  EXPECT_EQ(Error(R"j({"regex_uri": "^/a"})j"),
            "property \"regex_uri\" validation failed: wrong type: expected array, got string");
  EXPECT_EQ(Error(R"j({"regex_uri": ["^/a"]})j"),
            "property \"regex_uri\" validation failed: expect array to have at least 2 items");
  EXPECT_EQ(Error(R"j({"regex_uri": ["^/a", 1]})j"),
            "property \"regex_uri\" validation failed: failed to validate item 2: wrong type: "
            "expected string, got number");
  EXPECT_EQ(Error(R"j({"regex_uri": ["^/a", "/b", "^/c"]})j"),
            "The length of regex_uri should be an even number");
  std::string bad = Error(R"j({"regex_uri": ["^/(a", "/b"]})j");
  EXPECT_EQ(bad.rfind("invalid regex_uri(^/(a, /b): invalid regex '^/(a': missing closing "
                      "parenthesis",
                      0),
            0u)
      << bad;
  // ngx.re.sub's replacement syntax: a `$` must name a group (or be `$$`).
  EXPECT_EQ(Error(R"j({"regex_uri": ["^/(a)", "/$x"]})j"),
            "invalid regex_uri(^/(a), /$x): invalid capturing variable name at offset 1");
  EXPECT_EQ(Error(R"j({"regex_uri": ["^/(a)", "/${1"]})j"),
            "invalid regex_uri(^/(a), /${1): invalid capturing variable name at offset 1");
  // The second pair is checked too.
  EXPECT_EQ(
      Error(R"j({"regex_uri": ["^/a", "/b", "(", "/c"]})j").rfind("invalid regex_uri((, /c): ", 0),
      0u);
}

TEST(ProxyRewriteConfigTest, HeaderErrors) {
  constexpr char kNone[] =
      "property \"headers\" validation failed: value should match only one schema, but "
      "matches none";
  EXPECT_EQ(Error(R"j({"headers": {}})j"), kNone);
  EXPECT_EQ(Error(R"j({"headers": "X-A: 1"})j"), kNone);
  EXPECT_EQ(Error(R"j({"headers": {"add": {}}})j"), kNone);
  EXPECT_EQ(Error(R"j({"headers": {"set": {"X-A": []}}})j"), kNone);
  EXPECT_EQ(Error(R"j({"headers": {"set": {"X-A": [true]}}})j"), kNone);
  EXPECT_EQ(Error(R"j({"headers": {"set": {"X:A": "1"}}})j"), kNone);
  EXPECT_EQ(Error(R"j({"headers": {"remove": []}})j"), kNone);
  EXPECT_EQ(Error(R"j({"headers": {"remove": ["a:b"]}})j"), kNone);
  EXPECT_EQ(Error(R"j({"headers": {"add": {"X-A": "1"}, "other": {"X-B": "2"}}})j"), kNone);
  EXPECT_EQ(Error(R"j({"headers": {"X-A": {"k": 1}}})j"), kNone);
  // The legacy form's own checks (check_set_headers).
  EXPECT_EQ(Error(R"j({"headers": {"X:A": {"k": 1}}})j"), "invalid type as header value");
  EXPECT_EQ(Error(R"j({"headers": {"X:A": "1"}})j"), "invalid field character in header");
  EXPECT_EQ(Error(R"j({"headers": {"X A": "1"}})j"), "invalid field character in header");
  EXPECT_EQ(Error(R"j({"headers": {"X-A": "a\r\nX-B: 1"}})j"), "invalid value character in header");
  EXPECT_EQ(Error(R"j({"headers": {"X-A": "caf\u00e9"}})j"), "invalid value character in header");
  // Valid ones.
  Make(R"j({"headers": {"X-A": 1, "X-B": "v"}})j");
  Make(R"j({"headers": {"add": {"X-A": ["1", 2]}, "set": {"X-B": 1.5}, "remove": ["X-C"]}})j");
  Make(R"j({"uri": "/a", "unknown_field": 1})j");  // APISIX's schema allows other properties
}

TEST(ProxyRewriteUriTest, Template) {
  EXPECT_EQ(Target(R"j({"uri": "/plugin_proxy_rewrite"})j", "/hello"), "/plugin_proxy_rewrite");
  // The client's query is appended, with '&' when the template has its own.
  EXPECT_EQ(Target(R"j({"uri": "/new"})j", "/old", "/old?a=1", "a=1"), "/new?a=1");
  EXPECT_EQ(Target(R"j({"uri": "/new?b=2"})j", "/old", "/old?a=1", "a=1"), "/new?b=2&a=1");
  // A template without variables is encoded at load, as any rendering would be per request:
  // the path as ngx_escape_uri, the query's control bytes only; it is the new $uri too.
  {
    FakePluginContext ctx;
    Reset(ctx, "/old", "/old?a=1", "a=1");
    PluginConstSharedPtr p = Make(R"j({"uri": "/n b%#?q=x y\u0001"})j");
    ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
    EXPECT_EQ(ctx.upstream_uri.value_or(""), "/n%20b%25%23?q=x y%01&a=1");
    EXPECT_EQ(ctx.vars["uri"], "/n%20b%25%23?q=x y%01");
    Reset(ctx, "/old");
    ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
    EXPECT_EQ(ctx.upstream_uri.value_or(""), "/n%20b%25%23?q=x y%01");
  }
  // Variables, braces and defaults.
  FakePluginContext ctx;
  Reset(ctx, "/x");
  ctx.vars["arg_user"] = "jo";
  PluginConstSharedPtr p = Make(R"j({"uri": "/u/$arg_user/${http_x_t ?? none}/${uri}"})j");
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.upstream_uri.value_or(""), "/u/jo/none//x");
  EXPECT_EQ(ctx.vars["uri"], "/u/jo/none//x");  // $uri for later plugins
  // A '?' inside a value does not start a query: %3F, then '%' is encoded as every '%'.
  Reset(ctx, "/x");
  ctx.vars["arg_q"] = "a?b";
  p = Make(R"j({"uri": "/q/$arg_q"})j");
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.upstream_uri.value_or(""), "/q/a%253Fb");
}

// APISIX's proxy-rewrite3.t TEST 22 and 24: a decoded CR/LF and '?' in $uri.
TEST(ProxyRewriteUriTest, ApisixCrlfCases) {
  const std::string uri = "/hello?0z=700&a=c HTTP/1.1\r\nHost:google.com\r\n\r\n";
  EXPECT_EQ(Target(R"j({"host": "test.xxxx.com"})j", uri),
            "/hello%3F0z=700&a=c%20HTTP/1.1%0D%0AHost:google.com%0D%0A%0D%0A");
  EXPECT_EQ(Target(R"j({"uri": "/$uri/remain"})j", uri),
            "//hello%253F0z=700&a=c%20HTTP/1.1%0D%0AHost:google.com%0D%0A%0D%0A/remain");
}

TEST(ProxyRewriteUriTest, SafeEncoding) {
  std::string out;
  constexpr char kPath[] = "/a b#c%d?e\x7f\x80\xff~!$&'()*+,;=:@\"";
  AppendUriSafe(&out, std::string_view(kPath, sizeof(kPath) - 1));
  EXPECT_EQ(out, "/a%20b%23c%25d%3Fe%7F%80%FF~!$&'()*+,;=:@\"");
  out.clear();
  constexpr char kQuery[] = "?a=b c\r\n\x00\x7f";
  AppendControlsEscaped(&out, std::string_view(kQuery, sizeof(kQuery) - 1));
  EXPECT_EQ(out, "?a=b c%0D%0A%00%7F");
  // Without uri or regex_uri, $uri is still re-encoded (and the query appended).
  EXPECT_EQ(Target(R"j({"method": "POST"})j", "/a b", "/a%20b?x=1", "x=1"), "/a%20b?x=1");
}

TEST(ProxyRewriteUriTest, RegexUri) {
  // APISIX's proxy-rewrite3.t TEST 26.
  EXPECT_EQ(Target(R"j({"regex_uri": ["^/test/(.*)/(.*)/(.*)", "/$1_$2_$3?a=c"]})j",
                   "/test/plugin/proxy/rewrite"),
            "/plugin_proxy_rewrite?a=c");
  // The client's query after the replacement's.
  EXPECT_EQ(Target(R"j({"regex_uri": ["^/t/(.*)", "/${1}?a=c"]})j", "/t/x", "/t/x?b=1", "b=1"),
            "/x?a=c&b=1");
  // Only the match is replaced (ngx.re.sub); the first pattern that matches wins.
  EXPECT_EQ(Target(R"j({"regex_uri": ["/mid/", "/MID/"]})j", "/a/mid/b"), "/a/MID/b");
  EXPECT_EQ(Target(R"j({"regex_uri": ["^/x/(.*)", "/first/$1", "^/(.*)", "/second/$1"]})j", "/x/y"),
            "/first/y");
  EXPECT_EQ(Target(R"j({"regex_uri": ["^/x/(.*)", "/first/$1", "^/(.*)", "/second/$1"]})j", "/z"),
            "/second/z");
  // No match: the URI as it was (encoded).
  EXPECT_EQ(Target(R"j({"regex_uri": ["^/nope", "/x"]})j", "/a b"), "/a%20b");
  // $0, $$ and a group that did not take part.
  EXPECT_EQ(Target(R"j({"regex_uri": ["^/(a)?(b+)", "/$0-$$-$1-$2"]})j", "/bb/c"), "//bb-$--bb/c");
  // A '?' that came from $uri (a decoded %3F) is part of the path.
  EXPECT_EQ(Target(R"j({"regex_uri": ["^/p/(.*)", "/q/$1"]})j", "/p/a?b"), "/q/a%3Fb");
}

TEST(ProxyRewriteUriTest, UnsafeMode) {
  // The raw target, query and all, not normalized and not encoded again.
  EXPECT_EQ(Target(R"j({"use_real_request_uri_unsafe": true})j", "/print_uri_detailed",
                   "/print%5Furi%5Fdetailed?x=1", "x=1"),
            "/print%5Furi%5Fdetailed?x=1");
  EXPECT_EQ(
      Target(R"j({"use_real_request_uri_unsafe": true, "uri": "/n"})j", "/o", "/o?x=1", "x=1"),
      "/n?x=1");
  EXPECT_EQ(
      Target(R"j({"use_real_request_uri_unsafe": true, "uri": "/n?y=2"})j", "/o", "/o?x=1", "x=1"),
      "/n?y=2&x=1");
  EXPECT_EQ(Target(R"j({"use_real_request_uri_unsafe": true, "regex_uri": ["x=1", "x=2"]})j", "/o",
                   "/o%20?x=1", "x=1"),
            "/o%20?x=2");
  // $uri is left alone.
  PluginConstSharedPtr p = Make(R"j({"use_real_request_uri_unsafe": true, "uri": "/n"})j");
  FakePluginContext ctx;
  Reset(ctx, "/o");
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.vars["uri"], "/o");
}

TEST(ProxyRewriteUriTest, UriWinsOverRegexUri) {
  EXPECT_EQ(Target(R"j({"uri": "/u", "regex_uri": ["^/(.*)", "/r/$1"]})j", "/a"), "/u");
}

TEST(ProxyRewriteHeadersTest, CapturesAndVariables) {
  // APISIX's proxy-rewrite3.t TEST 27/28: captures of the regex that matched.
  PluginConstSharedPtr p = Make(R"j({"regex_uri": ["^/test/(.*)/(.*)/(.*)", "/echo"],
      "headers": {"add": {"X-Request-ID": "$1/$2/$3"}, "set": {"X-Api": "${2}-$remote_addr"}}})j");
  FakePluginContext ctx;
  Reset(ctx, "/test/plugin/proxy/rewrite");
  ctx.vars["remote_addr"] = "10.0.0.1";
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.upstream_uri.value_or(""), "/echo");
  EXPECT_EQ(ctx.UpstreamValues("X-Request-ID"), std::vector<std::string>{"plugin/proxy/rewrite"});
  EXPECT_EQ(ctx.UpstreamValues("X-Api"), std::vector<std::string>{"proxy-10.0.0.1"});
  // TEST 29/30: no match, so the captures are empty.
  Reset(ctx, "/echo");
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.upstream_uri.value_or(""), "/echo");
  EXPECT_EQ(ctx.UpstreamValues("X-Request-ID"), std::vector<std::string>{"//"});
  // TEST 31/32: a group that did not take part is "".
  p = Make(R"j({"regex_uri": ["^/test/(not_matched)?.*", "/echo"],
                "headers": {"add": {"X-Request-ID": "test1-$1-$2"}}})j");
  Reset(ctx, "/test/plugin/proxy/rewrite");
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.UpstreamValues("X-Request-ID"), std::vector<std::string>{"test1--"});
  // A capture's value is not read again as a template (APISIX would resolve "$remote_addr"
  // in it: a client could read any variable through its path).
  Reset(ctx, "/test/$remote_addr/b/c");
  ctx.vars["remote_addr"] = "10.0.0.1";
  p = Make(R"j({"regex_uri": ["^/test/(.*)/(.*)/(.*)", "/echo"],
                "headers": {"set": {"X-A": "$1"}}})j");
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.UpstreamValues("X-A"), std::vector<std::string>{"$remote_addr"});
  // `uri` takes no captures: $1 there is the unknown variable "1".
  p = Make(R"j({"uri": "/x$1", "headers": {"set": {"X-A": "[$1]"}}})j");
  Reset(ctx, "/a");
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.upstream_uri.value_or(""), "/x");
  EXPECT_EQ(ctx.UpstreamValues("X-A"), std::vector<std::string>{"[]"});
}

TEST(ProxyRewriteHeadersTest, AddThenSetThenRemove) {
  // proxy-rewrite3.t TEST 14-18: add keeps the client's lines, set replaces, remove drops.
  PluginConstSharedPtr p = Make(
      R"j({"headers": {"add": {"test": "123"}, "set": {"test2": "2233"}, "remove": ["hello"]}})j");
  FakePluginContext ctx;
  Reset(ctx, "/echo");
  ctx.request_headers = {{"test", "sssss"}, {"test", "bbb"}, {"hello", "word"}, {"test2", "x"}};
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.UpstreamValues("test"), (std::vector<std::string>{"sssss", "bbb", "123"}));
  EXPECT_EQ(ctx.UpstreamValues("test2"), std::vector<std::string>{"2233"});
  EXPECT_TRUE(ctx.UpstreamValues("hello").empty());
  // TEST 19/20: set runs after add, remove after set (APISIX's code, not its doc).
  p = Make(R"j({"headers": {"add": {"test": "test_in_add"}, "set": {"test": "test_in_set"}}})j");
  Reset(ctx, "/echo");
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.UpstreamValues("test"), std::vector<std::string>{"test_in_set"});
  p = Make(R"j({"headers": {"set": {"test": "s"}, "remove": ["test"]}})j");
  Reset(ctx, "/echo");
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_TRUE(ctx.UpstreamValues("test").empty());
  ASSERT_EQ(ctx.request_edits.size(), 2u);
  EXPECT_EQ(ctx.request_edits[0].op, "set");
  EXPECT_EQ(ctx.request_edits[1].op, "remove");
}

TEST(ProxyRewriteHeadersTest, ArraysEmptyValuesAndLegacyForm) {
  PluginConstSharedPtr p = Make(R"j({"headers": {
      "add": {"X-Multi": ["a", 2, "$http_x_in"]},
      "set": {"X-Set": ["s1", "", "s2"], "X-Gone": "", "X-Var": "$http_x_missing"}}})j");
  FakePluginContext ctx;
  Reset(ctx, "/");
  ctx.request_headers = {{"X-Gone", "g"}, {"X-Var", "v"}, {"X-In", "in"}, {"X-Set", "old"}};
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.UpstreamValues("X-Multi"), (std::vector<std::string>{"a", "2", "in"}));
  EXPECT_EQ(ctx.UpstreamValues("X-Set"), (std::vector<std::string>{"s1", "s2"}));
  EXPECT_TRUE(ctx.UpstreamValues("X-Gone").empty());  // "" removes
  EXPECT_TRUE(ctx.UpstreamValues("X-Var").empty());   // renders "": removes
  // The legacy flat form is `set`; numbers as Lua prints them.
  p = Make(R"j({"headers": {"X-Api-Version": "v2", "X-Num": 3, "X-Float": 1.5, "X-Del": ""}})j");
  Reset(ctx, "/");
  ctx.request_headers = {{"X-Api-Version", "v1"}, {"X-Del", "d"}};
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.UpstreamValues("X-Api-Version"), std::vector<std::string>{"v2"});
  EXPECT_EQ(ctx.UpstreamValues("X-Num"), std::vector<std::string>{"3"});
  EXPECT_EQ(ctx.UpstreamValues("X-Float"), std::vector<std::string>{"1.5"});
  EXPECT_TRUE(ctx.UpstreamValues("X-Del").empty());
  // Templates with defaults.
  p = Make(R"j({"headers": {"set": {"X-T": "${http_x_tenant ?? public}:$remote_addr"}}})j");
  Reset(ctx, "/");
  ctx.vars["remote_addr"] = "1.2.3.4";
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.UpstreamValues("X-T"), std::vector<std::string>{"public:1.2.3.4"});
}

TEST(ProxyRewriteTest, MethodAndHost) {
  PluginConstSharedPtr p = Make(R"j({"method": "PROPFIND", "host": "up.example:8080"})j");
  FakePluginContext ctx;
  Reset(ctx, "/a");
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.upstream_method.value_or(""), "PROPFIND");
  EXPECT_EQ(ctx.upstream_host.value_or(""), "up.example:8080");
  EXPECT_EQ(ctx.upstream_uri.value_or(""), "/a");
  // Without them, neither is set.
  p = Make(R"j({"uri": "/b"})j");
  Reset(ctx, "/a");
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_FALSE(ctx.upstream_method.has_value());
  EXPECT_FALSE(ctx.upstream_host.has_value());
}

TEST(ProxyRewriteTest, WorkerBuffersAreReused) {
  // The same worker state serves every request; a second request sees nothing of the first.
  PluginConstSharedPtr p = Make(R"j({"regex_uri": ["^/(a+)/(b+)", "/$2/$1"],
                                     "headers": {"set": {"X-C": "$2"}}})j");
  FakePluginContext ctx;
  Reset(ctx, "/aaaa/bbbb/tail");
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.upstream_uri.value_or(""), "/bbbb/aaaa/tail");
  EXPECT_EQ(ctx.UpstreamValues("X-C"), std::vector<std::string>{"bbbb"});
  ctx.NextRequest();
  ctx.vars["uri"] = "/zz";
  ASSERT_EQ(p->Rewrite(ctx), PhaseResult::kContinue);
  EXPECT_EQ(ctx.upstream_uri.value_or(""), "/zz");
  EXPECT_TRUE(ctx.UpstreamValues("X-C").empty());  // no match: $2 is "", and "" removes
}

}  // namespace
}  // namespace turnpike::plugins::proxy_rewrite
