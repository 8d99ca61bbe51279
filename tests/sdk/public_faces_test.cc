// The public faces plugins use (include/turnpike/): expression, ip_matcher, template, strings.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "support/alloc_counter.h"
#include "turnpike/expression.h"
#include "turnpike/ip_matcher.h"
#include "turnpike/regex.h"
#include "turnpike/strings.h"
#include "turnpike/template.h"

namespace turnpike {
namespace {

// Variables by the name as written.
class MapVars final : public RequestVars {
 public:
  std::optional<std::string_view> Get(const VarRef& var) override {
    auto it = vars.find(var.source);
    if (it == vars.end()) return std::nullopt;
    return std::string_view(it->second);
  }
  std::map<std::string, std::string> vars;
};

TEST(ExpressionTest, CompilesAndEvaluatesTheVarsDsl) {
  StatusOr<ExpressionConstPtr> e = Expression::Compile(
      nlohmann::json::parse(R"([["arg_a", "==", "1"], ["OR", ["http_x", "~~", "^v[0-9]$"],
                                                          ["arg_b", ">", 3]]])"));
  ASSERT_TRUE(e.ok()) << e.status().message();
  MapVars vars;
  vars.vars = {{"arg_a", "1"}, {"arg_b", "4"}};
  EXPECT_TRUE(e.value()->Eval(vars));
  vars.vars["arg_b"] = "2";
  EXPECT_FALSE(e.value()->Eval(vars));
  vars.vars["http_x"] = "v7";
  EXPECT_TRUE(e.value()->Eval(vars));
  EXPECT_FALSE(e.value()->Reads(VarRef::Kind::kPostArg));
  EXPECT_TRUE(Expression::Compile(nlohmann::json::parse(R"([["post_arg_x", "==", "1"]])"))
                  .value()
                  ->Reads(VarRef::Kind::kPostArg));
}

TEST(ExpressionTest, ErrorsReadLikeApisix) {
  StatusOr<ExpressionConstPtr> e =
      Expression::Compile(nlohmann::json::parse(R"([["arg_a", "foo", "1"]])"));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(),
            "failed to validate the 'vars' expression: invalid operator 'foo'");
}

TEST(IpMatcherFaceTest, MatchesAddressesAndCidrs) {
  StatusOr<IpMatcher> m = IpMatcher::Build({"10.0.0.0/8", "2001:db8::/32", "127.0.0.1"});
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m.value().Match("10.1.2.3"));
  EXPECT_TRUE(m.value().Match("2001:db8::1"));
  EXPECT_TRUE(m.value().Match("127.0.0.1"));
  EXPECT_FALSE(m.value().Match("127.0.0.2"));
  EXPECT_FALSE(m.value().Match("not an ip"));
  IpMatcher copy = m.value();  // copies share the ranges
  EXPECT_TRUE(copy.Match("10.0.0.1"));
  EXPECT_FALSE(IpMatcher().Match("10.0.0.1"));
  EXPECT_EQ(IpMatcher::Build({"10.0.0.256"}).status().message(), "invalid IP or CIDR '10.0.0.256'");
}

TEST(TemplateTest, ParsesLikeResolveVar) {
  Template plain = Template::Compile("no vars here");
  EXPECT_TRUE(plain.is_literal());
  EXPECT_EQ(plain.literal(), "no vars here");
  EXPECT_TRUE(Template::Compile("price $").is_literal());
  EXPECT_TRUE(Template::Compile("${}").is_literal());
  MapVars vars;
  vars.vars = {{"uri", "/a"}, {"arg_b", "2"}};
  std::string out;
  Template::Compile("$uri|${ arg_b }|${arg_c??d}|$uri$uri|\\$uri|$nosuchvar.").Render(vars, &out);
  EXPECT_EQ(out, "/a|2|d|/a/a|\\$uri|");
  EXPECT_TRUE(Template::Compile("$post_arg_x").Reads(VarRef::Kind::kPostArg));
  EXPECT_FALSE(Template::Compile("$uri").Reads(VarRef::Kind::kPostArg));
}

TEST(TemplateTest, CapturesOnlyWhenAsked) {
  MapVars vars;
  vars.vars = {{"uri", "/a"}};
  const std::optional<std::string_view> groups[] = {"/old/x/y", "x", std::nullopt};
  std::string out;
  // Without the option `$1` is a variable name Turnpike does not know: "" (response-rewrite).
  Template plain = Template::Compile("/new/$1");
  EXPECT_FALSE(plain.uses_captures());
  plain.Render(vars, &out, groups);
  EXPECT_EQ(out, "/new/");
  Template t = Template::Compile("/new/$1/${2}/${3 ?? none}/$0$uri/$9", {.captures = true});
  EXPECT_TRUE(t.uses_captures());
  EXPECT_FALSE(t.is_literal());
  t.Render(vars, &out, groups);
  EXPECT_EQ(out, "/new/x//none//old/x/y/a/");
}

TEST(TemplateTest, RenderingDoesNotAllocateOnceWarm) {
  MapVars vars;
  vars.vars = {{"uri", "/a-long-enough-path-to-leave-the-small-string-buffer"}};
  Template t = Template::Compile("${uri}|${arg_z ?? default-value}|$1", {.captures = true});
  const std::optional<std::string_view> groups[] = {"m", "one"};
  std::string out;
  t.Render(vars, &out, groups);
  uint64_t before = turnpike::testing::ThreadAllocations();
  for (int i = 0; i < 100; ++i) t.Render(vars, &out, groups);
  EXPECT_EQ(turnpike::testing::ThreadAllocations() - before, 0u);
}

TEST(TemplateTest, ReSubReplacementSyntax) {
  MapVars vars;
  vars.vars = {{"uri", "/a"}};
  const std::optional<std::string_view> groups[] = {"whole", "one", std::nullopt};
  constexpr Template::Options kReSub = {.re_sub_syntax = true};
  StatusOr<Template> t = Template::CompileStrict("/$1/${0}/$$/$2/$$1/$uri", kReSub);
  EXPECT_FALSE(t.ok());  // $uri is no group
  EXPECT_EQ(t.status().message(), "invalid capturing variable name at offset 19");
  t = Template::CompileStrict("/$1/${0}/$$/$2/$$1/\\$1", kReSub);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t.value().uses_captures());
  std::string out;
  t.value().Render(vars, &out, groups);
  EXPECT_EQ(out, "/one/whole/$//$1/\\one");  // no backslash escapes
  for (const char* bad : {"$", "${1", "${}", "${x}", "a$b", "$1234"}) {
    EXPECT_FALSE(Template::CompileStrict(bad, kReSub).ok()) << bad;
  }
  // Lenient: a bad reference stays text.
  Template lenient = Template::Compile("$x-$1", kReSub);
  lenient.Render(vars, &out, groups);
  EXPECT_EQ(out, "$x-one");
}

TEST(TemplateTest, QuerySeparatorEscape) {
  MapVars vars;
  vars.vars = {{"arg_q", "a?b?"}, {"uri", "/p"}};
  Template t = Template::Compile("/x?$arg_q&${arg_none ?? d?}$uri",
                                 {.escape = Template::Escape::kQuerySeparator});
  std::string out;
  t.Render(vars, &out);
  EXPECT_EQ(out, "/x?a%3Fb%3F&d%3F/p");  // the template's own '?' stays
}

TEST(RegexFaceTest, SearchFillsGroups) {
  StatusOr<Regex> re = Regex::Compile("^/api/v(\\d+)/(x)?(.*)");
  ASSERT_TRUE(re.ok()) << re.status().message();
  EXPECT_EQ(re.value().capture_count(), 3u);
  RegexMatch m;
  ASSERT_EQ(re.value().Search("/api/v12/users", &m), Regex::kMatch);
  EXPECT_EQ(m.size(), 4u);
  EXPECT_EQ(m.group(0), "/api/v12/users");
  EXPECT_EQ(m.group(1), "12");
  EXPECT_EQ(m.group(2), std::nullopt);  // did not take part
  EXPECT_EQ(m.group(3), "users");
  EXPECT_EQ(m.group(4), std::nullopt);  // no such group
  EXPECT_EQ(re.value().Search("/other", &m), Regex::kNoMatch);
  EXPECT_EQ(m.group(0), std::nullopt);
  // Unanchored search; caseless.
  StatusOr<Regex> mid = Regex::Compile("B(c)", /*caseless=*/true);
  ASSERT_TRUE(mid.ok());
  ASSERT_EQ(mid.value().Search("aabcd", &m), Regex::kMatch);
  EXPECT_EQ(m.group(0), "bc");
  EXPECT_EQ(m.group(1), "c");
  // Errors name the pattern.
  StatusOr<Regex> bad = Regex::Compile("(");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("invalid regex '(': missing closing parenthesis", 0), 0u)
      << bad.status().message();
}

TEST(RegexFaceTest, ManyGroupsAndNoAllocationOnceReserved) {
  std::string pattern;
  for (int i = 0; i < 12; ++i) pattern += "(.)";
  StatusOr<Regex> re = Regex::Compile(pattern);
  ASSERT_TRUE(re.ok());
  RegexMatch m;  // grows to 13 pairs on the first search
  ASSERT_EQ(re.value().Search("abcdefghijklmn", &m), Regex::kMatch);
  EXPECT_EQ(m.group(12), "l");
  uint64_t before = turnpike::testing::ThreadAllocations();
  for (int i = 0; i < 100; ++i) ASSERT_EQ(re.value().Search("abcdefghijklmn", &m), Regex::kMatch);
  EXPECT_EQ(turnpike::testing::ThreadAllocations() - before, 0u);
  // A pathological pattern fails on PCRE2's limits instead of running forever.
  StatusOr<Regex> evil = Regex::Compile("(a+)+$");
  ASSERT_TRUE(evil.ok());
  EXPECT_NE(evil.value().Search(std::string(40, 'a') + "b", &m), Regex::kMatch);
}

TEST(StringsTest, Helpers) {
  EXPECT_TRUE(EqualsIgnoreCase("Content-Type", "content-TYPE"));
  EXPECT_FALSE(EqualsIgnoreCase("a", "ab"));
  EXPECT_EQ(AsciiLower('Q'), 'q');
  std::string out;
  AppendFormUnescaped(&out, "a+b%20c%zz");
  EXPECT_EQ(out, "a b c%zz");
}

}  // namespace
}  // namespace turnpike
