#include "router/pattern.h"

#include <gtest/gtest.h>

namespace turnpike::router {
namespace {

TEST(PatternTest, ParseUri) {
  UriPattern p = ParseUriPattern("/a/b");
  EXPECT_FALSE(p.is_prefix);
  EXPECT_EQ(p.literal, "/a/b");
  EXPECT_EQ(p.glob, "");

  p = ParseUriPattern("/a/*");
  EXPECT_TRUE(p.is_prefix);
  EXPECT_EQ(p.literal, "/a/");
  EXPECT_EQ(p.glob, "");

  p = ParseUriPattern("/a*");
  EXPECT_TRUE(p.is_prefix);
  EXPECT_EQ(p.literal, "/a");

  p = ParseUriPattern("*");
  EXPECT_TRUE(p.is_prefix);
  EXPECT_EQ(p.literal, "");
  EXPECT_EQ(p.glob, "");

  p = ParseUriPattern("/a/*/b");
  EXPECT_TRUE(p.is_prefix);
  EXPECT_EQ(p.literal, "/a/");
  EXPECT_EQ(p.glob, "*/b");

  p = ParseUriPattern("/a/**");
  EXPECT_TRUE(p.is_prefix);
  EXPECT_EQ(p.literal, "/a/");
  EXPECT_EQ(p.glob, "**");

  p = ParseUriPattern("/x:y");
  EXPECT_FALSE(p.is_prefix);
  EXPECT_EQ(p.literal, "/x:y");
}

TEST(PatternTest, ParseHost) {
  HostPattern h = ParseHostPattern("a.com");
  EXPECT_FALSE(h.is_wildcard);
  EXPECT_EQ(h.literal, "a.com");
  h = ParseHostPattern("*.a.com");
  EXPECT_TRUE(h.is_wildcard);
  EXPECT_EQ(h.literal, ".a.com");
  h = ParseHostPattern("*");
  EXPECT_TRUE(h.is_wildcard);
  EXPECT_EQ(h.literal, "");
}

TEST(PatternTest, Glob) {
  EXPECT_TRUE(GlobMatch("", ""));
  EXPECT_FALSE(GlobMatch("", "a"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("*", "a/b/c"));
  EXPECT_TRUE(GlobMatch("*/b", "x/b"));
  EXPECT_TRUE(GlobMatch("*/b", "x/y/b"));
  EXPECT_TRUE(GlobMatch("*/b", "/b"));
  EXPECT_FALSE(GlobMatch("*/b", "x/bc"));
  EXPECT_FALSE(GlobMatch("*/b", "x/c"));
  EXPECT_TRUE(GlobMatch("a*b*c", "abc"));
  EXPECT_TRUE(GlobMatch("a*b*c", "a-b-b-c"));
  EXPECT_FALSE(GlobMatch("a*b*c", "a-c-b"));
  EXPECT_TRUE(GlobMatch("**x", "yyx"));
  EXPECT_TRUE(GlobMatch("a*", "a"));
  EXPECT_FALSE(GlobMatch("a?", "ab"));  // only '*' is special
  EXPECT_TRUE(GlobMatch("a?", "a?"));
}

}  // namespace
}  // namespace turnpike::router
