// Plain scalar typing (lyaml's implicit resolvers) and Lua's tonumber.
#include "config/yaml_scalar.h"

#include <gtest/gtest.h>

#include <cmath>

namespace turnpike::config {
namespace {

::testing::AssertionResult IsInt(std::string_view text, int64_t want) {
  PlainScalar s = ResolvePlainScalar(text);
  if (s.kind == PlainScalar::kInt && s.i == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << text << " -> kind " << s.kind << " i " << s.i;
}

::testing::AssertionResult IsNumber(std::string_view text, double want) {
  PlainScalar s = ResolvePlainScalar(text);
  if (s.kind == PlainScalar::kNumber && (s.d == want || (std::isnan(want) && std::isnan(s.d)))) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << text << " -> kind " << s.kind << " d " << s.d;
}

bool IsString(std::string_view text) {
  return ResolvePlainScalar(text).kind == PlainScalar::kString;
}

TEST(PlainScalarTest, NullAndBool) {
  for (const char* t : {"", "~", "null", "Null", "NULL"}) {
    EXPECT_EQ(ResolvePlainScalar(t).kind, PlainScalar::kNull) << t;
  }
  for (const char* t : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"}) {
    PlainScalar s = ResolvePlainScalar(t);
    EXPECT_EQ(s.kind, PlainScalar::kBool) << t;
    EXPECT_TRUE(s.b) << t;
  }
  for (const char* t : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"}) {
    PlainScalar s = ResolvePlainScalar(t);
    EXPECT_EQ(s.kind, PlainScalar::kBool) << t;
    EXPECT_FALSE(s.b) << t;
  }
  EXPECT_TRUE(IsString("tRue"));
  EXPECT_TRUE(IsString("nULL"));
  EXPECT_TRUE(IsString("y"));
}

TEST(PlainScalarTest, Integers) {
  EXPECT_TRUE(IsInt("0", 0));
  EXPECT_TRUE(IsInt("42", 42));
  EXPECT_TRUE(IsInt("-42", -42));
  EXPECT_TRUE(IsInt("+42", 42));
  EXPECT_TRUE(IsInt("1_000", 1000));
  EXPECT_TRUE(IsInt("0755", 493));   // octal, as YAML 1.1
  EXPECT_TRUE(IsInt("-012", -10));
  EXPECT_TRUE(IsInt("00", 0));
  EXPECT_TRUE(IsInt("089", 89));     // not octal: decimal
  EXPECT_TRUE(IsInt("0x1F", 31));
  EXPECT_TRUE(IsInt("-0x_ff", -255));
  EXPECT_TRUE(IsInt("0x1E", 30));    // contains an E: lyaml's float resolver, same value
  EXPECT_TRUE(IsInt("0b101", 5));
  EXPECT_TRUE(IsInt("0b1_0", 2));
  EXPECT_TRUE(IsString("0b1"));      // lyaml wants two binary characters
  EXPECT_TRUE(IsInt("1:30", 90));    // sexagesimal
  EXPECT_TRUE(IsInt("-1:00:00", -3600));
  EXPECT_TRUE(IsInt("9223372036854775807", INT64_MAX));
  EXPECT_TRUE(IsNumber("9223372036854775808", 9223372036854775808.0));  // too large for int64
}

TEST(PlainScalarTest, Numbers) {
  EXPECT_TRUE(IsNumber("1.5", 1.5));
  EXPECT_TRUE(IsNumber("-2e3", -2000));
  EXPECT_TRUE(IsNumber("1E+2", 100));
  EXPECT_TRUE(IsNumber(".5", 0.5));
  EXPECT_TRUE(IsNumber("5.", 5));
  EXPECT_TRUE(IsNumber("1_000.5", 1000.5));
  EXPECT_TRUE(IsNumber("1:30.5", 90.5));
  EXPECT_TRUE(IsNumber(".inf", INFINITY));
  EXPECT_TRUE(IsNumber("-.Inf", -INFINITY));
  EXPECT_TRUE(IsNumber(".NaN", NAN));
  EXPECT_TRUE(IsNumber("1e400", INFINITY));
}

TEST(PlainScalarTest, Strings) {
  for (const char* t : {"abc", "1.2.3", "10.0.0.1", "127.0.0.1:80", "::1", "fe80::1", "1::2",
                        "1:", ":1", "0x", "0xg", "e5", ".", "-", "+", "1e", "1.5x", "/a",
                        "radixtree_uri", "1:2a", ".infx", "0o17"}) {
    EXPECT_TRUE(IsString(t)) << t;
  }
}

TEST(LuaToNumberTest, LikeTonumber) {
  EXPECT_EQ(LuaToNumber("8080").kind, PlainScalar::kInt);
  EXPECT_EQ(LuaToNumber("8080").i, 8080);
  EXPECT_EQ(LuaToNumber(" -7 ").i, -7);
  EXPECT_EQ(LuaToNumber("010").i, 10);  // no octal in Lua
  EXPECT_EQ(LuaToNumber("0x10").i, 16);
  EXPECT_EQ(LuaToNumber("1.5").kind, PlainScalar::kNumber);
  EXPECT_EQ(LuaToNumber("1e3").d, 1000);
  for (const char* t : {"", " ", "abc", "1_000", "1:30", "true", "1.2.3", "0x"}) {
    EXPECT_EQ(LuaToNumber(t).kind, PlainScalar::kString) << t;
  }
}

}  // namespace
}  // namespace turnpike::config
