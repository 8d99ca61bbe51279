#include "plugins/response_rewrite/response_rewrite.h"

#include <gtest/gtest.h>

#include <string>

#include "plugins/fake_plugin_context.h"
#include "plugins/response_rewrite/substitution.h"
#include "support/fake_factory_context.h"

namespace turnpike::plugins::response_rewrite {
namespace {

FactoryContext& TestContext() { return turnpike::testing::FakeFactoryContext::Default(); }

using testing::FakePluginContext;
using testing::FilterBody;

PluginConstSharedPtr Make(const std::string& json) {
  StatusOr<PluginConstSharedPtr> p =
      ResponseRewriteFactory().Create(nlohmann::json::parse(json), TestContext());
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? p.value() : nullptr;
}

std::string Error(const std::string& json) {
  StatusOr<PluginConstSharedPtr> p =
      ResponseRewriteFactory().Create(nlohmann::json::parse(json), TestContext());
  EXPECT_FALSE(p.ok()) << json;
  return p.ok() ? "" : p.status().message();
}

std::string Sub(const char* regex, const char* replace, const char* options, bool global,
                const char* in) {
  StatusOr<Substitution> s = Substitution::Compile(regex, replace, options, global);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return "<error>";
  std::string out;
  s.value().Apply(in, &out);
  return out;
}

// Runs header_filter then the body through body_filter.
std::string RunPhases(const Plugin& p, FakePluginContext& ctx,
                      const std::vector<std::string>& body) {
  p.HeaderFilter(ctx);
  if ((p.phases() & kPhaseBodyFilter) == 0) {
    std::string all;
    for (const std::string& piece : body) all += piece;
    return all;
  }
  return FilterBody(p, ctx, body);
}

TEST(ResponseRewriteTest, ValidatesLikeApisix) {
  EXPECT_EQ(Error(R"({"status_code": 599})"),
            "property \"status_code\" validation failed: expected 599 to be at most 598");
  EXPECT_EQ(Error(R"({"status_code": 199})"),
            "property \"status_code\" validation failed: expected 199 to be at least 200");
  EXPECT_EQ(Error(R"({"body": 2})"),
            "property \"body\" validation failed: wrong type: expected string, got number");
  EXPECT_EQ(Error(R"({"status_code": 200, "headers": {"": 2}})"), "invalid field length in header");
  EXPECT_EQ(Error(R"({"status_code": 200, "headers": {"X-Name": true}})"),
            "invalid type as header value");
  EXPECT_EQ(Error(R"({"body": "1", "body_base64": true})"), "invalid base64 content");
  EXPECT_EQ(Error(R"({"body_base64": true})"), "invalid base64 content");
  EXPECT_EQ(Error(R"({"body": "a*b=", "body_base64": true})"), "invalid base64 content");
  EXPECT_EQ(
      Error(R"({"vars": [["status"]]})").rfind("failed to validate the 'vars' expression: ", 0),
      0u);
  EXPECT_EQ(Error(R"({"vars": {}})"),
            "property \"vars\" validation failed: wrong type: expected array, got object");
  EXPECT_EQ(Error(R"({"body": "x", "filters": [{"regex": "a", "replace": "b"}]})"),
            "failed to validate dependent schema for \"body\": value wasn't supposed to match "
            "schema");
  EXPECT_EQ(Error(R"({"filters": [{"regex": "hello"}]})"),
            "property \"filters\" validation failed: failed to validate item 1: property "
            "\"replace\" is required");
  EXPECT_EQ(Error(R"({"filters": [{"regex": "hello", "replace": "", "scope": "two"}]})"),
            "property \"filters\" validation failed: failed to validate item 1: property "
            "\"scope\" validation failed: matches none of the enum values");
  EXPECT_EQ(Error(R"({"filters": [{"regex": "", "replace": ""}]})"),
            "property \"filters\" validation failed: failed to validate item 1: property "
            "\"regex\" validation failed: string too short, expected at least 1, got 0");
  EXPECT_EQ(Error(R"({"filters": []})"),
            "property \"filters\" validation failed: expect array to have at least 1 items");
  EXPECT_EQ(Error(R"({"filters": [{"regex": "hello", "replace": "", "options": "h"}]})"),
            "regex \"hello\" validation failed: unknown flag \"h\" (flags \"h\")");
  EXPECT_EQ(Error(R"({"filters": [{"regex": "(", "replace": ""}]})")
                .rfind("regex \"(\" validation failed: pcre2_compile() failed: ", 0),
            0u);
  EXPECT_NE(Error(R"({"filters": [{"regex": "a", "replace": "$x"}]})")
                .find("invalid capturing variable name"),
            std::string::npos);
  // headers: the new form's items are checked ("object matches none of the required").
  for (const char* bad :
       {R"({"headers": {"add": ["X-A"]}})", R"({"headers": {"add": []}})",
        R"({"headers": {"add": ["X-A: http://x/"]}})", R"({"headers": {"set": {}}})",
        R"({"headers": {"set": {"a": []}}})", R"({"headers": {"remove": ["a:b"]}})",
        R"({"headers": {"add": ["X A: 1"]}})"}) {
    EXPECT_EQ(Error(bad).rfind("property \"headers\" validation failed: object matches none of "
                               "the required",
                               0),
              0u)
        << bad;
  }
  EXPECT_EQ(Error(R"({"max_resp_body_size": 0})"),
            "property \"max_resp_body_size\" validation failed: expected 0 to be at least 1");
  // Valid shapes.
  Make(R"({"headers": {}})");  // the old form may be empty
  Make(R"({"headers": {"X-Server-id": 3, "X-Ratio": 1.5}})");
  Make(R"({"body": "SGVsbG8K", "body_base64": true})");
  Make(R"({"vars": [["status", "==", 200]], "status_code": 201})");
}

TEST(ResponseRewriteTest, ReplacesStatusBodyAndDropsBodyHeaders) {
  auto p = Make(R"({"status_code": 403, "body": "new body\n"})");
  FakePluginContext ctx;
  ctx.response_headers = {
      {"Content-Length", "11"}, {"Content-Encoding", "gzip"}, {"ETag", "\"x\""}, {"X-Keep", "1"}};
  EXPECT_EQ(RunPhases(*p, ctx, {"hello ", "world", "\n"}), "new body\n");
  EXPECT_EQ(ctx.status, 403);
  EXPECT_TRUE(ctx.body_modified);
  EXPECT_EQ(ctx.response_headers,
            FakePluginContext::Headers({{"X-Keep", "1"}}));  // body headers dropped
}

TEST(ResponseRewriteTest, DecodesBase64Body) {
  auto p = Make(R"({"body": "SGVsbG8K", "body_base64": true})");
  FakePluginContext ctx;
  EXPECT_EQ(RunPhases(*p, ctx, {"x"}), "Hello\n");
  EXPECT_EQ(DecodeBase64("SGVsbA"), "Hell");  // padding optional, as nginx
  EXPECT_EQ(DecodeBase64("SGk=trailing ignored"), "Hi");
  EXPECT_FALSE(DecodeBase64("S").has_value());
}

TEST(ResponseRewriteTest, VarsDecideWhetherToRewrite) {
  auto p = Make(R"({"vars": [["status", "==", 200], ["arg_x", "==", "1"]],
                    "status_code": 404, "body": "rewritten",
                    "headers": {"X-Rewritten": "yes"}})");
  FakePluginContext ctx;
  ctx.vars["arg_x"] = "1";
  EXPECT_EQ(RunPhases(*p, ctx, {"original"}), "rewritten");
  EXPECT_EQ(ctx.status, 404);
  EXPECT_EQ(ctx.ResponseValues("X-Rewritten"), std::vector<std::string>{"yes"});

  FakePluginContext miss;
  miss.vars["arg_x"] = "1";
  miss.status = 500;  // `status` is the response's
  EXPECT_EQ(RunPhases(*p, miss, {"origi", "nal"}), "original");
  EXPECT_EQ(miss.status, 500);
  EXPECT_FALSE(miss.body_modified);
  EXPECT_TRUE(miss.response_headers.empty());

  FakePluginContext no_arg;
  EXPECT_EQ(RunPhases(*p, no_arg, {"original"}), "original");
}

TEST(ResponseRewriteTest, OldHeaderFormSetsWithVariables) {
  auto p = Make(R"({"headers": {"X-A": "$remote_addr",
                                "X-B": "from $remote_addr to ${server_addr}:$server_port",
                                "X-C": "${http_x_missing ?? none}", "X-D": "$unknown_thing!",
                                "X-E": 3, "X-F": "cost \\$5"}})");
  FakePluginContext ctx;
  ctx.vars = {{"remote_addr", "127.0.0.1"}, {"server_addr", "127.0.0.1"}, {"server_port", "1980"}};
  ctx.response_headers = {{"X-A", "old"}};
  RunPhases(*p, ctx, {});
  EXPECT_EQ(ctx.ResponseValues("X-A"), std::vector<std::string>{"127.0.0.1"});
  EXPECT_EQ(ctx.ResponseValues("X-B"),
            std::vector<std::string>{"from 127.0.0.1 to 127.0.0.1:1980"});
  EXPECT_EQ(ctx.ResponseValues("X-C"), std::vector<std::string>{"none"});
  EXPECT_EQ(ctx.ResponseValues("X-D"), std::vector<std::string>{"!"});
  EXPECT_EQ(ctx.ResponseValues("X-E"), std::vector<std::string>{"3"});
  EXPECT_EQ(ctx.ResponseValues("X-F"), std::vector<std::string>{"cost \\$5"});
  EXPECT_FALSE(ctx.body_modified);  // headers only: the body stays
}

TEST(ResponseRewriteTest, NewHeaderFormAddsSetsAndRemoves) {
  auto p = Make(R"({"headers": {"add": ["Cache-Control: no-cache", "X-Add:$remote_addr"],
                                "set": {"X-Set": "s", "Cache-Control": "max-age=0"},
                                "remove": ["X-Gone", "Set-Cookie"]}})");
  FakePluginContext ctx;
  ctx.vars["remote_addr"] = "1.2.3.4";
  ctx.response_headers = {{"Cache-Control", "public"}, {"X-Gone", "1"}, {"Set-Cookie", "a=b"}};
  RunPhases(*p, ctx, {});
  // add keeps the node's value, then set replaces every Cache-Control.
  EXPECT_EQ(ctx.ResponseValues("Cache-Control"), std::vector<std::string>{"max-age=0"});
  EXPECT_EQ(ctx.ResponseValues("X-Add"), std::vector<std::string>{"1.2.3.4"});
  EXPECT_EQ(ctx.ResponseValues("X-Set"), std::vector<std::string>{"s"});
  EXPECT_TRUE(ctx.ResponseValues("X-Gone").empty());
  EXPECT_TRUE(ctx.ResponseValues("Set-Cookie").empty());

  auto add_only = Make(R"({"headers": {"add": ["Cache-Control: no-cache"]}})");
  FakePluginContext ctx2;
  ctx2.response_headers = {{"Cache-Control", "max-age=0"}};
  RunPhases(*add_only, ctx2, {});
  EXPECT_EQ(ctx2.ResponseValues("Cache-Control"),
            std::vector<std::string>({"max-age=0", "no-cache"}));
}

TEST(ResponseRewriteTest, FiltersOnceAndGlobal) {
  auto once = Make(R"({"filters": [{"regex": "l", "replace": "t"}]})");
  FakePluginContext ctx;
  ctx.response_headers = {{"Content-Length", "12"}};
  EXPECT_EQ(RunPhases(*once, ctx, {"hel", "lo wor", "ld\n"}), "hetlo world\n");
  EXPECT_TRUE(ctx.body_modified);
  EXPECT_TRUE(ctx.response_headers.empty());

  auto global = Make(R"({"filters": [{"regex": "l", "replace": "t", "scope": "global"}]})");
  FakePluginContext g;
  EXPECT_EQ(RunPhases(*global, g, {"hel", "lo wor", "ld\n"}), "hetto wortd\n");

  // Filters run in order, each on the previous one's output; captures and options.
  auto chain = Make(R"json({"filters": [
      {"regex": "hello", "replace": "", "scope": "global"},
      {"regex": "(w)(o)", "replace": "${2}$1$$", "scope": "global"},
      {"regex": "L", "replace": "T", "options": "ijo"}]})json");
  FakePluginContext c;
  EXPECT_EQ(RunPhases(*chain, c, {"hello world hello world"}), " ow$rTd  ow$rld");

  auto no_match = Make(R"({"filters": [{"regex": "nothing", "replace": "x"}]})");
  FakePluginContext n;
  EXPECT_EQ(RunPhases(*no_match, n, {"hello ", "world"}), "hello world");
}

TEST(ResponseRewriteTest, FiltersSkipEncodedBodies) {
  auto p = Make(R"({"filters": [{"regex": "l", "replace": "t"}]})");
  FakePluginContext ctx;
  ctx.response_headers = {{"Content-Encoding", "br"}, {"Content-Length", "5"}};
  EXPECT_EQ(RunPhases(*p, ctx, {"hel", "lo"}), "hello");
  EXPECT_FALSE(ctx.body_modified);
  EXPECT_EQ(ctx.ResponseValues("Content-Encoding"), std::vector<std::string>{"br"});
}

TEST(ResponseRewriteTest, FiltersHoldAtMostMaxRespBodySize) {
  auto p = Make(R"({"max_resp_body_size": 8,
                    "filters": [{"regex": "a", "replace": "b", "scope": "global"}]})");
  FakePluginContext ctx;
  // The first 8 bytes are filtered, the rest passes as it comes.
  EXPECT_EQ(RunPhases(*p, ctx, {"aaaa", "aaaaaa", "aa"}), "bbbbbbbbaaaa");
  // Exactly the limit before the end: filtered there, the rest passes.
  FakePluginContext exact;
  EXPECT_EQ(RunPhases(*p, exact, {"aaaa", "aaaa", "aa"}), "bbbbbbbbaa");
  FakePluginContext under;
  EXPECT_EQ(RunPhases(*p, under, {"aaaa", "aaaa"}), "bbbbbbbb");
}

TEST(ResponseRewriteTest, SubstitutionMatchesNgxReSub) {
  EXPECT_EQ(Sub("a", "b", "jo", false, "aaa"), "baa");
  EXPECT_EQ(Sub("a", "b", "jo", true, "aaa"), "bbb");
  EXPECT_EQ(Sub("", "-", "jo", true, "ab"), "-a-b-");  // empty matches advance
  EXPECT_EQ(Sub("x*", "-", "jo", true, "abc"), "-a-b-c-");
  EXPECT_EQ(Sub("(\\w+) (\\w+)", "$2 $1", "jo", false, "hello world!"), "world hello!");
  EXPECT_EQ(Sub("(a)|(b)", "[$2]", "jo", true, "ab"), "[][b]");  // unset group: ""
  EXPECT_EQ(Sub("a", "$9", "jo", true, "bab"), "bb");            // no such group: ""
  EXPECT_EQ(Sub("^l", "L", "jom", true, "la\nlb"), "La\nLb");
  EXPECT_EQ(Sub("A.B", "x", "jois", false, "a\nb"), "x");
  EXPECT_EQ(Sub(".", "x", "u", true, "é!"), "xx");  // characters, not bytes
  EXPECT_EQ(Sub("", "-", "u", true, "é"), "-é-");
  EXPECT_EQ(Sub("a", "b", "", true, ""), "");
}

TEST(ResponseRewriteTest, TemplateParsesLikeResolveVar) {
  Template plain = Template::Compile("no vars here");
  EXPECT_TRUE(plain.is_literal());
  EXPECT_EQ(plain.literal(), "no vars here");
  EXPECT_TRUE(Template::Compile("price $").is_literal());
  EXPECT_TRUE(Template::Compile("${}").is_literal());
  FakePluginContext ctx;
  ctx.vars = {{"uri", "/a"}, {"arg_b", "2"}};
  std::string out;
  Template::Compile("$uri|${ arg_b }|${arg_c??d}|$uri$uri|\\$uri").Render(ctx, &out);
  EXPECT_EQ(out, "/a|2|d|/a/a|\\$uri");
}

// In UTF mode the subject must be valid UTF-8. pcre2_jit_match() skipped that check and its
// JIT code read past the end of "\xc3" (ending the match at offset 2 of 1), so Apply threw
// std::out_of_range on a worker (found by tests/fuzz/template_fuzz).
TEST(ResponseRewriteTest, SubstitutionLeavesInvalidUtf8Alone) {
  const std::string buffer =
      "\xc3"
      "a";
  const std::string_view truncated(buffer.data(), 1);
  for (const char* pattern : {".", "(*UTF)."}) {
    StatusOr<Substitution> s =
        Substitution::Compile(pattern, "[$0]", std::string_view(pattern) == "." ? "u" : "", true);
    ASSERT_TRUE(s.ok()) << s.status().message();
    for (std::string_view in :
         {truncated, std::string_view("ok \xff\xfe"), std::string_view("\xc3\xa9\xc3")}) {
      std::string out;
      size_t n = 0;
      ASSERT_NO_THROW(n = s.value().Apply(in, &out)) << pattern;
      EXPECT_EQ(n, 0u) << pattern;
      EXPECT_EQ(out, in) << pattern;
    }
    std::string out;
    EXPECT_EQ(s.value().Apply("\xc3\xa9t", &out), 2u) << pattern;
    EXPECT_EQ(out, "[\xc3\xa9][t]") << pattern;
  }
  // 'U' (PCRE2_MATCH_INVALID_UTF): invalid sequences never match, the rest does.
  StatusOr<Substitution> lax = Substitution::Compile(".", "[$0]", "U", true);
  ASSERT_TRUE(lax.ok());
  std::string out;
  EXPECT_EQ(lax.value().Apply(truncated, &out), 0u);
  EXPECT_EQ(out, truncated);
  EXPECT_EQ(lax.value().Apply("a\xff"
                              "b",
                              &out),
            2u);
  EXPECT_EQ(out, "[a]\xff[b]");
}

}  // namespace
}  // namespace turnpike::plugins::response_rewrite
