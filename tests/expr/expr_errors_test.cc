// Expr::Compile: invalid expressions and their messages.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "expr/expr.h"

namespace turnpike::expr {
namespace {

using nlohmann::json;

std::string ErrorOfJson(const json& rule) {
  StatusOr<ExprConstPtr> e = Expr::Compile(rule);
  if (e.ok()) return "ok";
  const std::string prefix = "failed to validate the 'vars' expression: ";
  const std::string m = e.status().message();
  EXPECT_EQ(m.substr(0, prefix.size()), prefix) << m;
  return m.substr(prefix.size());
}

std::string ErrorOf(std::string_view text) { return ErrorOfJson(json::parse(text)); }

TEST(ExprErrorsTest, FullMessage) {
  StatusOr<ExprConstPtr> e = Expr::Compile(json::parse(R"([["arg_a", "=~", "x"]])"));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(),
            "failed to validate the 'vars' expression: invalid operator '=~'");
}

TEST(ExprErrorsTest, NotAnArray) {
  EXPECT_EQ(ErrorOf(R"({"a": 1})"), R"(rule should be an array, got {"a":1})");
  EXPECT_EQ(ErrorOf(R"("arg_a")"), R"(rule should be an array, got "arg_a")");
  EXPECT_EQ(ErrorOf("null"), "rule should be an array, got null");
}

TEST(ExprErrorsTest, BareExpressionMustBeWrapped) {
  EXPECT_EQ(ErrorOf(R"(["arg_a", "==", "x"])"), "rule should be wrapped inside brackets");
  EXPECT_EQ(ErrorOf(R"([5, "==", "x"])"), "rule should be wrapped inside brackets");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "==", "x"], "OR"])"), "rule should be wrapped inside brackets");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "==", "x"], null])"), "rule should be wrapped inside brackets");
}

TEST(ExprErrorsTest, UnknownOperator) {
  EXPECT_EQ(ErrorOf(R"([["arg_a", "=~", "x"]])"), "invalid operator '=~'");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "LIKE", "x"]])"), "invalid operator 'like'");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "!", "x"]])"), "invalid operator '!'");
  EXPECT_EQ(ErrorOf(R"([["arg_a", 5, "x"]])"), "invalid operator '5'");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "!", "=~", "x"]])"), "invalid operator '=~'");
}

TEST(ExprErrorsTest, WrongArity) {
  EXPECT_EQ(ErrorOf(R"([["arg_a"]])"), "invalid expression");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "==", "x", "y", "z"]])"), "invalid expression");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "not", "==", "x"]])"), "bad 'not' expression");
  EXPECT_EQ(ErrorOf(R"([[]])"), "rule too short");
  EXPECT_EQ(ErrorOf(R"([{}])"), "rule too short");
  EXPECT_EQ(ErrorOf(R"(["AND", ["arg_a", "==", "x"]])"), "rule too short");
  EXPECT_EQ(ErrorOf(R"(["OR"])"), "rule too short");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "==", "x"], ["!OR", ["arg_b", "==", "y"]]])"), "rule too short");
}

TEST(ExprErrorsTest, OperatorSlotMustBeAStringOrNumber) {
  EXPECT_EQ(ErrorOf(R"([["arg_a", true]])"), "invalid expression");
  EXPECT_EQ(ErrorOf(R"([["arg_a", null]])"), "invalid expression");
  EXPECT_EQ(ErrorOf(R"([["arg_a", ["=="], "x"]])"), "invalid expression");
}

TEST(ExprErrorsTest, Variables) {
  EXPECT_EQ(ErrorOf(R"([["nope", "==", "x"]])"), "unknown variable 'nope'");
  EXPECT_EQ(ErrorOf(R"([["arg_", "==", "x"]])"), "unknown variable 'arg_'");
  EXPECT_EQ(ErrorOf(R"(["OR", ["arg_a", "==", "x"], ["bogus", "==", "y"]])"),
            "unknown variable 'bogus'");
  EXPECT_EQ(ErrorOf(R"([[5, "==", "x"]])"),
            "invalid expression: the variable name must be a string");
}

TEST(ExprErrorsTest, BadRegex) {
  EXPECT_EQ(ErrorOf(R"([["arg_a", "~~", "("]])"),
            "invalid regex '(': missing closing parenthesis at offset 1");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "~*", "[a-"]])"),
            "invalid regex '[a-': missing terminating ] for character class at offset 3");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "~~", null]])"), "invalid regex: expected a string, got null");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "~~"]])"), "invalid regex: expected a string, got nothing");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "~~", ["a"]]])"),
            R"(invalid regex: expected a string, got ["a"])");
  EXPECT_EQ(ErrorOf(R"([["arg_a", "~~", 12]])"), "ok");  // Lua coerces numbers
}

TEST(ExprErrorsTest, BadIpMatch) {
  EXPECT_EQ(ErrorOf(R"([["remote_addr", "ipmatch", "10.0.0.0/33"]])"),
            "invalid IP or CIDR '10.0.0.0/33'");
  EXPECT_EQ(ErrorOf(R"([["remote_addr", "ipmatch", ["10.0.0.1", "bad"]]])"),
            "invalid IP or CIDR 'bad'");
  EXPECT_EQ(ErrorOf(R"([["remote_addr", "ipmatch", [""]]])"), "invalid IP or CIDR ''");
  EXPECT_EQ(ErrorOf(R"([["remote_addr", "ipmatch", [5]]])"), "invalid IP or CIDR '5'");
  EXPECT_EQ(ErrorOf(R"([["remote_addr", "ipmatch", ""]])"), "invalid ip address");
  EXPECT_EQ(ErrorOf(R"([["remote_addr", "ipmatch", []]])"), "invalid ip address");
  EXPECT_EQ(ErrorOf(R"([["remote_addr", "ipmatch", null]])"), "invalid ip address");
  EXPECT_EQ(ErrorOf(R"([["remote_addr", "ipmatch"]])"), "invalid ip address");
}

TEST(ExprErrorsTest, NestingLimit) {
  std::string deep = R"(["arg_a", "==", "x"])";
  for (int i = 0; i < Expr::kMaxDepth - 1; ++i) deep = "[" + deep + "]";
  EXPECT_EQ(ErrorOf(deep), "ok");
  EXPECT_EQ(ErrorOf("[" + deep + "]"), "rule nested too deep (more than 32 levels)");
}

TEST(ExprErrorsTest, FirstErrorWins) {
  EXPECT_EQ(ErrorOf(R"([["arg_a", "=~", "x"], ["nope", "==", "y"]])"), "invalid operator '=~'");
}

// Rules from YAML may hold strings that are not UTF-8 (JSON text never does). Messages that
// quote such a value used json::dump(), which throws on them; the bytes now print as U+FFFD
// (found by tests/fuzz/yaml_config_fuzz, through ip-restriction's message).
TEST(ExprErrorsTest, InvalidUtf8InQuotedValuesDoesNotThrow) {
  const std::string bad = "a\xff";
  const std::string shown = "\"a\xEF\xBF\xBD\"";
  std::string m;
  ASSERT_NO_THROW(m = ErrorOfJson(json(bad)));
  EXPECT_EQ(m, "rule should be an array, got " + shown);
  ASSERT_NO_THROW(m = ErrorOfJson(json::array({json::array({"arg_a", "~~", json::array({bad})})})));
  EXPECT_EQ(m, "invalid regex: expected a string, got [" + shown + "]");
  ASSERT_NO_THROW(m = ErrorOfJson(json::array({json::array(
                      {"remote_addr", "ipmatch", json::array({json::array({bad})})})})));
  EXPECT_EQ(m, "invalid IP or CIDR '[" + shown + "]'");
}

}  // namespace
}  // namespace turnpike::expr
