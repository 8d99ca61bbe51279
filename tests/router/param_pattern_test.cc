// Param-mode uri reading (router/pattern.h): prefix split, tokens, and the token matcher.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "router/pattern.h"

namespace turnpike::router {
namespace {

using Kind = PathToken::Kind;

TEST(ParamPatternTest, Split) {
  ParamUriPattern p = ParseParamUriPattern("/a/b");
  EXPECT_FALSE(p.is_prefix);
  EXPECT_EQ(p.literal, "/a/b");
  EXPECT_FALSE(p.has_check);

  p = ParseParamUriPattern("/user/:id");
  EXPECT_TRUE(p.is_prefix);
  EXPECT_EQ(p.literal, "/user/");
  EXPECT_TRUE(p.has_check);

  p = ParseParamUriPattern("/files/*");
  EXPECT_TRUE(p.is_prefix);
  EXPECT_EQ(p.literal, "/files/");
  EXPECT_FALSE(p.has_check);

  p = ParseParamUriPattern("/files*");
  EXPECT_EQ(p.literal, "/files");
  EXPECT_FALSE(p.has_check);

  p = ParseParamUriPattern("/files/*path");
  EXPECT_EQ(p.literal, "/files/");
  EXPECT_TRUE(p.has_check);

  p = ParseParamUriPattern("/file:list");
  EXPECT_TRUE(p.is_prefix);
  EXPECT_EQ(p.literal, "/file");
  EXPECT_TRUE(p.has_check);

  p = ParseParamUriPattern(":id");
  EXPECT_EQ(p.literal, "");
  EXPECT_TRUE(p.has_check);
}

std::string Show(const std::vector<PathToken>& tokens) {
  std::string out;
  for (const PathToken& t : tokens) {
    out += t.kind == Kind::kLiteral ? "L(" : t.kind == Kind::kParam ? "P(" : "R(";
    out.append(t.text).append(")");
  }
  return out;
}

std::string Tokens(std::string_view uri) {
  std::vector<PathToken> tokens;
  const ParamUriPattern p = ParseParamUriPattern(uri);
  EXPECT_TRUE(TokenizeParamUri(uri, p.literal.size(), &tokens));
  return Show(tokens);
}

TEST(ParamPatternTest, Tokens) {
  EXPECT_EQ(Tokens("/user/:id"), "P(id)");
  EXPECT_EQ(Tokens("/user/:id/posts/*rest"), "P(id)L(/posts/)R(rest)");
  EXPECT_EQ(Tokens("/a/*/b"), "R()L(/b)");
  EXPECT_EQ(Tokens("/a/x*y/:z"), "R()L(y/)P(z)");
  EXPECT_EQ(Tokens("/file:list"), "L(:list)");
  EXPECT_EQ(Tokens("/a/:id*x/b"), "P(id*x)L(/b)");
  EXPECT_EQ(Tokens("/a/*n*m"), "R(n*m)");
  EXPECT_EQ(Tokens("/:a/:b"), "P(a)L(/)P(b)");
  EXPECT_EQ(Tokens("/x/:"), "P()");
}

TEST(ParamPatternTest, TooManyRests) {
  std::vector<PathToken> tokens;
  EXPECT_TRUE(TokenizeParamUri("/*/*/*/*/*/*/*/*", 1, &tokens));
  tokens.clear();
  EXPECT_FALSE(TokenizeParamUri("/*/*/*/*/*/*/*/*/*", 1, &tokens));
  EXPECT_TRUE(tokens.empty());
}

// Matches `uri` (after its prefix) against `path` (after the same prefix); "" = no match,
// otherwise "ok" followed by the captures.
std::string Match(std::string_view uri, std::string_view path) {
  std::vector<PathToken> tokens;
  const ParamUriPattern p = ParseParamUriPattern(uri);
  if (!path.starts_with(p.literal)) return "";
  EXPECT_TRUE(TokenizeParamUri(uri, p.literal.size(), &tokens));
  PathParams params;
  if (!MatchPathTokens(tokens.data(), tokens.size(), path.substr(p.literal.size()), &params)) {
    return "";
  }
  // Without captures the answer must be the same.
  EXPECT_TRUE(
      MatchPathTokens(tokens.data(), tokens.size(), path.substr(p.literal.size()), nullptr));
  std::string out = "ok";
  for (size_t i = 0; i < params.count; ++i) {
    out.append(" ").append(params.names[i]).append("=").append(params.values[i]);
  }
  return out;
}

TEST(ParamPatternTest, MatchSegments) {
  EXPECT_EQ(Match("/user/:id", "/user/42"), "ok id=42");
  EXPECT_EQ(Match("/user/:id", "/user/"), "");
  EXPECT_EQ(Match("/user/:id", "/user/4/2"), "");
  EXPECT_EQ(Match("/:a/x/:b", "/1/x/2"), "ok a=1 b=2");
  EXPECT_EQ(Match("/:a/x/:b", "/1/y/2"), "");
  EXPECT_EQ(Match("/:a/x/:b", "/1/x/"), "");
  EXPECT_EQ(Match("/file:list", "/file:list"), "ok");
  EXPECT_EQ(Match("/file:list", "/file:lis"), "");
}

TEST(ParamPatternTest, MatchRests) {
  EXPECT_EQ(Match("/files/*path", "/files/a/b/c"), "ok path=a/b/c");
  EXPECT_EQ(Match("/files/*path", "/files/"), "ok path=");
  EXPECT_EQ(Match("/a/*/b", "/a/x/y/b"), "ok");
  EXPECT_EQ(Match("/a/*/b", "/a//b"), "ok");
  EXPECT_EQ(Match("/a/*/b", "/a/b"), "");
  EXPECT_EQ(Match("/a/*x/b/*y", "/a/1/b/2/b/3"), "ok x=1/b/2 y=3");  // first rest greedy
  EXPECT_EQ(Match("/*x/*y", "/a/b/c"), "ok x=a/b y=c");
  EXPECT_EQ(Match("/*x/:id", "/a/b/c"), "ok x=a/b id=c");
  EXPECT_EQ(Match("/*x/:id", "/a/b/"), "");
  EXPECT_EQ(Match("/a*b*c", "/abc"), "ok");
  EXPECT_EQ(Match("/a*b*c", "/a-b-b-c"), "ok");
  EXPECT_EQ(Match("/a*b*c", "/a-c-b"), "");
  EXPECT_EQ(Match("/*x/*y/*z", "/1/2/3/4"), "ok x=1/2 y=3 z=4");
  EXPECT_EQ(Match("/*x/*y/*z", "/1/2"), "");
}

TEST(ParamPatternTest, LongAdversarialPathStaysFast) {
  // Several rests with failing tails: the matcher is polynomial, not exponential.
  std::string path = "/";
  for (int i = 0; i < 2000; ++i) path += "a/";
  path += "z";
  EXPECT_EQ(Match("/*a/*b/*c/*d/*e/*f/*g/:x/y", path), "");
  EXPECT_NE(Match("/*a/*b/*c/*d/*e/*f/*g/:x", path), "");
}

}  // namespace
}  // namespace turnpike::router
