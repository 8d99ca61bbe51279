#include "http/uri.h"

#include <gtest/gtest.h>

namespace turnpike::http {
namespace {

std::string Norm(std::string_view in) {
  std::string out;
  EXPECT_TRUE(NormalizePath(in, &out)) << in;
  return out;
}

bool Rejected(std::string_view in) {
  std::string out;
  return !NormalizePath(in, &out);
}

TEST(UriTest, NormalPathsNeedNoWork) {
  EXPECT_TRUE(IsNormalPath("/"));
  EXPECT_TRUE(IsNormalPath("/hello"));
  EXPECT_TRUE(IsNormalPath("/a/b.c/d..e/.f"));
  EXPECT_FALSE(IsNormalPath("/a//b"));
  EXPECT_FALSE(IsNormalPath("/a/./b"));
  EXPECT_FALSE(IsNormalPath("/a/../b"));
  EXPECT_FALSE(IsNormalPath("/a/.."));
  EXPECT_FALSE(IsNormalPath("/a/."));
  EXPECT_FALSE(IsNormalPath("/a%20b"));
}

TEST(UriTest, DecodesEscapes) {
  EXPECT_EQ(Norm("/a%20b"), "/a b");
  EXPECT_EQ(Norm("/%41%62"), "/Ab");
  EXPECT_EQ(Norm("/a%2Fb"), "/a/b");
}

TEST(UriTest, MergesSlashesAndResolvesDots) {
  EXPECT_EQ(Norm("//a///b"), "/a/b");
  EXPECT_EQ(Norm("/a/./b"), "/a/b");
  EXPECT_EQ(Norm("/a/b/../c"), "/a/c");
  EXPECT_EQ(Norm("/a/b/.."), "/a/");
  EXPECT_EQ(Norm("/a/."), "/a/");
  EXPECT_EQ(Norm("/a/%2E%2E/b"), "/b");
  EXPECT_EQ(Norm("/a/..b/c"), "/a/..b/c");
  EXPECT_EQ(Norm("/a/"), "/a/");
}

TEST(UriTest, RejectsWhatNginxRejects) {
  EXPECT_TRUE(Rejected("/.."));
  EXPECT_TRUE(Rejected("/../a"));
  EXPECT_TRUE(Rejected("/a/../../b"));
  EXPECT_TRUE(Rejected("/a%zz"));
  EXPECT_TRUE(Rejected("/a%4"));
  EXPECT_TRUE(Rejected("/a%00b"));
}

}  // namespace
}  // namespace turnpike::http
