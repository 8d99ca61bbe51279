// FormArgs: application/x-www-form-urlencoded bodies as ngx.req.get_post_args() reads them.

#include "http/form_args.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace turnpike::http {
namespace {

std::optional<std::string> Field(std::string_view body, std::string_view name) {
  FormArgs args;
  args.Parse(body);
  std::optional<std::string_view> v = args.Get(name);
  if (!v) return std::nullopt;
  return std::string(*v);
}

TEST(FormArgsTest, PlainFields) {
  FormArgs args;
  args.Parse("name=x&age=42");
  EXPECT_EQ(args.size(), 2u);
  EXPECT_EQ(args.Get("name"), "x");
  EXPECT_EQ(args.Get("age"), "42");
  EXPECT_EQ(args.Get("other"), std::nullopt);
  EXPECT_EQ(args.Get("Name"), std::nullopt);  // names are case-sensitive
}

TEST(FormArgsTest, DecodesPercentEscapesAndPlus) {
  EXPECT_EQ(Field("q=a+b%20c", "q"), "a b c");
  EXPECT_EQ(Field("q=%41%62%2b", "q"), "Ab+");
  EXPECT_EQ(Field("q=%e4%b8%ad", "q"), "\xe4\xb8\xad");
  EXPECT_EQ(Field("q=a%26b%3Dc", "q"), "a&b=c");  // escaped separators are data
  // Names are decoded too.
  EXPECT_EQ(Field("na%6De=x", "name"), "x");
  EXPECT_EQ(Field("first+name=x", "first name"), "x");
  // An escaped NUL is a byte like any other.
  EXPECT_EQ(Field("q=a%00b", "q"), std::string("a\0b", 3));
}

TEST(FormArgsTest, RepeatedNamesGiveTheFirstValue) {
  EXPECT_EQ(Field("x=1&x=2&x=3", "x"), "1");
  EXPECT_EQ(Field("x&x=2", "x"), "");  // the first occurrence counts even without a value
}

TEST(FormArgsTest, EmptyValuesAndMissingEquals) {
  EXPECT_EQ(Field("e=&f=1", "e"), "");
  EXPECT_EQ(Field("flag&f=1", "flag"), "");
  EXPECT_EQ(Field("f=1&flag", "flag"), "");
  EXPECT_EQ(Field("a=b=c", "a"), "b=c");  // only the first '=' separates
}

TEST(FormArgsTest, PairsWithoutNameAreDropped) {
  FormArgs args;
  args.Parse("=lost&&&x=1&=&");
  EXPECT_EQ(args.size(), 1u);
  EXPECT_EQ(args.Get("x"), "1");
  EXPECT_EQ(args.Get(""), std::nullopt);
  args.Parse("");
  EXPECT_EQ(args.size(), 0u);
  args.Parse("&");
  EXPECT_EQ(args.size(), 0u);
}

TEST(FormArgsTest, MalformedEscapesStayLiteral) {
  EXPECT_EQ(Field("q=%zz", "q"), "%zz");
  EXPECT_EQ(Field("q=%4", "q"), "%4");
  EXPECT_EQ(Field("q=%", "q"), "%");
  EXPECT_EQ(Field("q=100%", "q"), "100%");
  EXPECT_EQ(Field("q=%%41", "q"), "%A");  // the second '%' starts a valid escape
  EXPECT_EQ(Field("q=%4g1", "q"), "%4g1");
  EXPECT_EQ(Field("%=1", "%"), "1");
}

TEST(FormArgsTest, ReparseReplacesEverything) {
  FormArgs args;
  args.Parse("a=1&b=2");
  EXPECT_EQ(args.Get("b"), "2");
  args.Parse("c=3");
  EXPECT_EQ(args.Get("a"), std::nullopt);
  EXPECT_EQ(args.Get("b"), std::nullopt);
  EXPECT_EQ(args.Get("c"), "3");
  args.Clear();
  EXPECT_EQ(args.Get("c"), std::nullopt);
}

TEST(FormArgsTest, NewlinesAndBinaryAreKept) {
  EXPECT_EQ(Field("a=x\r\ny&b=2", "a"), "x\r\ny");
  EXPECT_EQ(Field("a=1&b=2\r\n", "b"), "2\r\n");  // trailing bytes belong to the last value
}

}  // namespace
}  // namespace turnpike::http
