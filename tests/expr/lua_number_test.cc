#include "expr/lua_number.h"

#include <gtest/gtest.h>

#include <cmath>

namespace turnpike::expr {
namespace {

TEST(LuaNumberTest, ToNumber) {
  EXPECT_EQ(LuaToNumber("12"), 12.0);
  EXPECT_EQ(LuaToNumber("-12"), -12.0);
  EXPECT_EQ(LuaToNumber("+12"), 12.0);
  EXPECT_EQ(LuaToNumber("1.5"), 1.5);
  EXPECT_EQ(LuaToNumber(".5"), 0.5);
  EXPECT_EQ(LuaToNumber("5."), 5.0);
  EXPECT_EQ(LuaToNumber("1e3"), 1000.0);
  EXPECT_EQ(LuaToNumber("1E-2"), 0.01);
  EXPECT_EQ(LuaToNumber(" \t12\n "), 12.0);
  EXPECT_EQ(LuaToNumber("0x1F"), 31.0);
  EXPECT_EQ(LuaToNumber("-0x10"), -16.0);
  EXPECT_EQ(LuaToNumber("0x1.8p1"), 3.0);
  EXPECT_EQ(LuaToNumber("inf"), INFINITY);
  EXPECT_EQ(LuaToNumber("-Infinity"), -INFINITY);
  EXPECT_TRUE(std::isnan(*LuaToNumber("nan")));
  EXPECT_EQ(LuaToNumber("1e999"), INFINITY);
  EXPECT_EQ(LuaToNumber("1e-999"), 0.0);
}

TEST(LuaNumberTest, NotNumbers) {
  for (const char* bad : {"", " ", "-", "+", ".", "1e", "--1", "+-1", "-+1", "0x", "0xg", "1 2",
                          "12a", "nan(1)", "infinit", "1_000", "0x1p", "1,5"}) {
    EXPECT_FALSE(LuaToNumber(bad).has_value()) << bad;
  }
}

TEST(LuaNumberTest, ToString) {
  EXPECT_EQ(LuaNumberToString(5), "5");
  EXPECT_EQ(LuaNumberToString(-5), "-5");
  EXPECT_EQ(LuaNumberToString(0.1), "0.1");
  EXPECT_EQ(LuaNumberToString(1e20), "1e+20");
  EXPECT_EQ(LuaNumberToString(1.0 / 3), "0.33333333333333");
}

}  // namespace
}  // namespace turnpike::expr
