// Expr: evaluation of every operator, negation, groups, null, numbers and missing variables.
#include "expr/expr.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fake_request_vars.h"

namespace turnpike::expr {
namespace {

using nlohmann::json;
using testing::FakeRequestVars;

ExprConstPtr MustCompile(std::string_view text) {
  StatusOr<ExprConstPtr> e = Expr::Compile(json::parse(text));
  EXPECT_TRUE(e.ok()) << text << ": " << e.status().message();
  return e.ok() ? std::move(e).value() : nullptr;
}

bool Eval(std::string_view text, FakeRequestVars vars) {
  ExprConstPtr e = MustCompile(text);
  return e != nullptr && e->Eval(vars);
}

// One clause `[var, op, value]` over arg_a (absent when `a` is null).
bool Clause(std::string_view op, std::string_view value_json, const char* a) {
  std::string text =
      R"([["arg_a", ")" + std::string(op) + R"(", )" + std::string(value_json) + "]]";
  FakeRequestVars vars;
  if (a != nullptr) vars.Set("arg_a", a);
  return Eval(text, vars);
}

const char* const kMissing = nullptr;

TEST(ExprTest, EmptyExpressionIsTrue) {
  ExprConstPtr e = MustCompile("[]");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->empty());
  FakeRequestVars vars;
  EXPECT_TRUE(e->Eval(vars));
  EXPECT_EQ(vars.gets, 0);
}

TEST(ExprTest, EqualsStrings) {
  EXPECT_TRUE(Clause("==", R"("json")", "json"));
  EXPECT_FALSE(Clause("==", R"("json")", "JSON"));
  EXPECT_FALSE(Clause("==", R"("json")", "json "));
  EXPECT_FALSE(Clause("==", R"("json")", kMissing));
  EXPECT_TRUE(Clause("==", R"("")", ""));
  EXPECT_FALSE(Clause("==", R"("")", kMissing));
}

TEST(ExprTest, NotEqualsStrings) {
  EXPECT_FALSE(Clause("~=", R"("json")", "json"));
  EXPECT_TRUE(Clause("~=", R"("json")", "xml"));
  EXPECT_TRUE(Clause("~=", R"("json")", kMissing));
}

TEST(ExprTest, NumberOnTheRightComparesNumerically) {
  EXPECT_TRUE(Clause("==", "5", "5"));
  EXPECT_TRUE(Clause("==", "5", "5.0"));
  EXPECT_TRUE(Clause("==", "5", " 5 "));
  EXPECT_TRUE(Clause("==", "5", "0x5"));
  EXPECT_TRUE(Clause("==", "500", "5e2"));
  EXPECT_TRUE(Clause("==", "-1.5", "-1.5"));
  EXPECT_FALSE(Clause("==", "5", "6"));
  EXPECT_FALSE(Clause("==", "5", "five"));
  EXPECT_FALSE(Clause("==", "5", ""));
  EXPECT_FALSE(Clause("==", "5", kMissing));

  EXPECT_FALSE(Clause("~=", "5", "5.0"));
  EXPECT_TRUE(Clause("~=", "5", "6"));
  EXPECT_TRUE(Clause("~=", "5", "five"));  // not a number: ~= is true
  EXPECT_TRUE(Clause("~=", "5", kMissing));
}

TEST(ExprTest, StringOnTheRightComparesBytesEvenIfNumeric) {
  EXPECT_FALSE(Clause("==", R"("5")", "5.0"));
  EXPECT_TRUE(Clause("==", R"("5")", "5"));
  EXPECT_TRUE(Clause("~=", R"("5")", "05"));
}

TEST(ExprTest, NullMatchesAMissingVariable) {
  EXPECT_TRUE(Clause("==", "null", kMissing));
  EXPECT_FALSE(Clause("==", "null", ""));
  EXPECT_FALSE(Clause("==", "null", "x"));
  EXPECT_FALSE(Clause("~=", "null", kMissing));
  EXPECT_TRUE(Clause("~=", "null", ""));
}

TEST(ExprTest, BooleansArraysAndObjectsNeverEqualAVariable) {
  for (const char* right : {"true", "false", R"(["x"])", R"({"x":1})"}) {
    EXPECT_FALSE(Clause("==", right, "x")) << right;
    EXPECT_FALSE(Clause("==", right, "true")) << right;
    EXPECT_FALSE(Clause("==", right, kMissing)) << right;
    EXPECT_TRUE(Clause("~=", right, "x")) << right;
    EXPECT_TRUE(Clause("~=", right, kMissing)) << right;
  }
}

TEST(ExprTest, OrderingOperators) {
  EXPECT_TRUE(Clause(">", "9", "10"));
  EXPECT_FALSE(Clause(">", "10", "10"));
  EXPECT_TRUE(Clause(">=", "10", "10"));
  EXPECT_TRUE(Clause("<", "10", "9.5"));
  EXPECT_FALSE(Clause("<", "10", "10"));
  EXPECT_TRUE(Clause("<=", "10", "10"));
  EXPECT_TRUE(Clause(">", "-1", "0"));
  EXPECT_TRUE(Clause(">=", "100", "1e2"));
  // Both sides go through tonumber(): "10" > "9" is numeric, not lexicographic.
  EXPECT_TRUE(Clause(">", R"("9")", "10"));
  EXPECT_TRUE(Clause("<", R"(" 0x10 ")", "15"));
}

TEST(ExprTest, OrderingWithNonNumbersOrMissingIsFalse) {
  for (const char* op : {">", ">=", "<", "<="}) {
    EXPECT_FALSE(Clause(op, "1", "abc")) << op;
    EXPECT_FALSE(Clause(op, "1", "")) << op;
    EXPECT_FALSE(Clause(op, "1", kMissing)) << op;
    EXPECT_FALSE(Clause(op, R"("abc")", "1")) << op;
    EXPECT_FALSE(Clause(op, "null", "1")) << op;
    EXPECT_FALSE(Clause(op, "true", "1")) << op;
    EXPECT_FALSE(Clause(op, "[1]", "1")) << op;
  }
}

TEST(ExprTest, RegexSearch) {
  EXPECT_TRUE(Clause("~~", R"("wor")", "hello world"));
  EXPECT_TRUE(Clause("~~", R"("^h.*d$")", "hello world"));
  EXPECT_FALSE(Clause("~~", R"("^world")", "hello world"));
  EXPECT_FALSE(Clause("~~", R"("hello")", "HELLO"));
  EXPECT_TRUE(Clause("~~", R"("^$")", ""));
  EXPECT_TRUE(Clause("~~", R"("[0-9]+")", "v12"));
  EXPECT_TRUE(Clause("~~", R"x("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)")x", "abcdefghijk"));  // captures
  EXPECT_FALSE(Clause("~~", R"(".*")", kMissing));
}

TEST(ExprTest, CaselessRegexSearch) {
  EXPECT_TRUE(Clause("~*", R"("hello")", "HeLLo there"));
  EXPECT_TRUE(Clause("~*", R"("^[A-Z]+$")", "abc"));
  EXPECT_FALSE(Clause("~*", R"("^[A-Z]+$")", "ab1"));
  EXPECT_FALSE(Clause("~*", R"(".*")", kMissing));
}

TEST(ExprTest, RegexOnBytesNotUtf8) {
  // No UTF mode (ngx.re without "u"): '.' is one byte.
  EXPECT_TRUE(Clause("~~", R"("^..$")", "\xc3\xa9"));
}

TEST(ExprTest, In) {
  EXPECT_TRUE(Clause("in", R"(["v1", "v2"])", "v2"));
  EXPECT_FALSE(Clause("in", R"(["v1", "v2"])", "v3"));
  EXPECT_FALSE(Clause("in", R"(["v1", "v2"])", kMissing));
  EXPECT_FALSE(Clause("in", R"([])", "v1"));
  EXPECT_FALSE(Clause("in", R"(["v1", null])", kMissing));
  // Lua equality: a number in the array never equals a (string) variable.
  EXPECT_FALSE(Clause("in", R"([1, 2])", "1"));
  EXPECT_TRUE(Clause("in", R"([1, "1"])", "1"));
  // Not an array: false.
  EXPECT_FALSE(Clause("in", R"("v1")", "v1"));
}

TEST(ExprTest, HasIsFalseForStringVariables) {
  EXPECT_FALSE(Clause("has", R"("a")", "a"));
  EXPECT_FALSE(Clause("has", R"("a")", "a,b"));
  EXPECT_FALSE(Clause("has", R"("a")", kMissing));
  FakeRequestVars vars{{"arg_a", "a"}};
  EXPECT_TRUE(Eval(R"([["arg_a", "!", "has", "a"]])", vars));
}

TEST(ExprTest, IpMatch) {
  EXPECT_TRUE(Clause("ipmatch", R"("127.0.0.1")", "127.0.0.1"));
  EXPECT_FALSE(Clause("ipmatch", R"("127.0.0.1")", "127.0.0.2"));
  EXPECT_TRUE(Clause("ipmatch", R"(["192.168.102.40", "192.168.3.0/24"])", "192.168.3.77"));
  EXPECT_TRUE(Clause("ipmatch", R"(["192.168.102.40", "192.168.3.0/24"])", "192.168.102.40"));
  EXPECT_FALSE(Clause("ipmatch", R"(["192.168.102.40", "192.168.3.0/24"])", "192.168.4.1"));
  EXPECT_TRUE(Clause("ipmatch", R"("2001:db8::/32")", "2001:db8:1::5"));
  EXPECT_FALSE(Clause("ipmatch", R"("2001:db8::/32")", "2001:db9::5"));
  EXPECT_TRUE(Clause("ipmatch", R"(["::1"])", "::1"));
  EXPECT_FALSE(Clause("ipmatch", R"(["10.0.0.0/8"])", "::ffff:10.0.0.1"));
  EXPECT_FALSE(Clause("ipmatch", R"("10.0.0.0/8")", "not-an-ip"));
  EXPECT_FALSE(Clause("ipmatch", R"("10.0.0.0/8")", ""));
  EXPECT_FALSE(Clause("ipmatch", R"("10.0.0.0/8")", kMissing));
}

TEST(ExprTest, OperatorNamesAreCaseInsensitive) {
  EXPECT_TRUE(Clause("IN", R"(["x"])", "x"));
  EXPECT_TRUE(Clause("IpMatch", R"("10.0.0.0/8")", "10.1.1.1"));
  EXPECT_FALSE(Clause("HAS", R"("x")", "x"));
}

TEST(ExprTest, NegationOfEveryOperator) {
  FakeRequestVars vars{{"arg_a", "10"}, {"arg_ip", "10.0.0.1"}};
  EXPECT_FALSE(Eval(R"([["arg_a", "!", "==", "10"]])", vars));
  EXPECT_TRUE(Eval(R"([["arg_a", "!", "~=", "10"]])", vars));
  EXPECT_FALSE(Eval(R"([["arg_a", "!", ">", 9]])", vars));
  EXPECT_TRUE(Eval(R"([["arg_a", "!", "<", 9]])", vars));
  EXPECT_FALSE(Eval(R"([["arg_a", "!", ">=", 10]])", vars));
  EXPECT_FALSE(Eval(R"([["arg_a", "!", "<=", 10]])", vars));
  EXPECT_FALSE(Eval(R"([["arg_a", "!", "~~", "^1"]])", vars));
  EXPECT_TRUE(Eval(R"([["arg_a", "!", "~*", "^x"]])", vars));
  EXPECT_FALSE(Eval(R"([["arg_a", "!", "in", ["10"]]])", vars));
  EXPECT_FALSE(Eval(R"([["arg_ip", "!", "ipmatch", "10.0.0.0/8"]])", vars));
}

TEST(ExprTest, NegationOfAMissingVariable) {
  // The negation applies to the operator's result, including the missing-variable answer.
  FakeRequestVars none;
  EXPECT_TRUE(Eval(R"([["arg_a", "!", "==", "x"]])", none));
  EXPECT_FALSE(Eval(R"([["arg_a", "!", "~=", "x"]])", none));
  EXPECT_TRUE(Eval(R"([["arg_a", "!", ">", 1]])", none));
  EXPECT_TRUE(Eval(R"([["arg_a", "!", "~~", "x"]])", none));
  EXPECT_TRUE(Eval(R"([["arg_a", "!", "in", ["x"]]])", none));
  EXPECT_TRUE(Eval(R"([["arg_a", "!", "ipmatch", "10.0.0.0/8"]])", none));
  EXPECT_FALSE(Eval(R"([["arg_a", "!", "==", null]])", none));
}

TEST(ExprTest, TwoElementFormIsEquality) {
  EXPECT_TRUE(Eval(R"([["arg_a", "x"]])", {{"arg_a", "x"}}));
  EXPECT_FALSE(Eval(R"([["arg_a", "x"]])", {{"arg_a", "y"}}));
  EXPECT_FALSE(Eval(R"([["arg_a", "x"]])", {}));
  // As in Lua, the value is lowercased (it sat in the operator slot)...
  EXPECT_TRUE(Eval(R"([["arg_a", "ABC"]])", {{"arg_a", "abc"}}));
  EXPECT_FALSE(Eval(R"([["arg_a", "ABC"]])", {{"arg_a", "ABC"}}));
  // ...and a number is compared as its string.
  EXPECT_TRUE(Eval(R"([["arg_a", 5]])", {{"arg_a", "5"}}));
  EXPECT_FALSE(Eval(R"([["arg_a", 5]])", {{"arg_a", "5.0"}}));
  // When the value is an operator name, it is that operator with no value.
  EXPECT_TRUE(Eval(R"([["arg_a", "=="]])", {}));
  EXPECT_FALSE(Eval(R"([["arg_a", "=="]])", {{"arg_a", ""}}));
  EXPECT_TRUE(Eval(R"([["arg_a", "~="]])", {{"arg_a", ""}}));
  EXPECT_FALSE(Eval(R"([["arg_a", "in"]])", {{"arg_a", "in"}}));
}

TEST(ExprTest, ListIsImplicitAnd) {
  const char* rule = R"([["arg_a", "==", "1"], ["arg_b", "==", "2"]])";
  EXPECT_TRUE(Eval(rule, {{"arg_a", "1"}, {"arg_b", "2"}}));
  EXPECT_FALSE(Eval(rule, {{"arg_a", "1"}, {"arg_b", "3"}}));
  EXPECT_FALSE(Eval(rule, {{"arg_a", "0"}, {"arg_b", "2"}}));
  // Lists nest.
  EXPECT_TRUE(Eval(R"([[["arg_a", "==", "1"]], [["arg_b", "==", "2"], ["arg_c", "==", null]]])",
                   {{"arg_a", "1"}, {"arg_b", "2"}}));
}

TEST(ExprTest, LogicalOperators) {
  const FakeRequestVars vars{{"arg_a", "1"}, {"arg_b", "2"}};
  const std::string t = R"(["arg_a", "==", "1"])";
  const std::string f = R"(["arg_a", "==", "0"])";
  auto rule = [](const char* op, const std::string& x, const std::string& y) {
    return std::string("[\"") + op + "\", " + x + ", " + y + "]";
  };
  EXPECT_TRUE(Eval(rule("AND", t, t), vars));
  EXPECT_FALSE(Eval(rule("AND", t, f), vars));
  EXPECT_TRUE(Eval(rule("OR", f, t), vars));
  EXPECT_FALSE(Eval(rule("OR", f, f), vars));
  EXPECT_FALSE(Eval(rule("!AND", t, t), vars));
  EXPECT_TRUE(Eval(rule("!AND", t, f), vars));
  EXPECT_FALSE(Eval(rule("!OR", f, t), vars));
  EXPECT_TRUE(Eval(rule("!OR", f, f), vars));
  // Case-insensitive.
  EXPECT_TRUE(Eval(rule("or", f, t), vars));
  EXPECT_FALSE(Eval(rule("!and", t, t), vars));
}

TEST(ExprTest, NestedGroups) {
  // (a == 1 AND (b == 2 OR c == 3)) AND NOT (d > 5 OR e ~~ ^x)
  const char* rule = R"([
      "AND",
      ["arg_a", "==", "1"],
      ["OR", ["arg_b", "==", "2"], ["arg_c", "==", "3"]],
      ["!OR", ["arg_d", ">", 5], ["arg_e", "~~", "^x"]]
  ])";
  EXPECT_TRUE(Eval(rule, {{"arg_a", "1"}, {"arg_b", "2"}, {"arg_d", "5"}}));
  EXPECT_TRUE(Eval(rule, {{"arg_a", "1"}, {"arg_c", "3"}, {"arg_e", "yx"}}));
  EXPECT_FALSE(Eval(rule, {{"arg_a", "1"}, {"arg_b", "0"}, {"arg_c", "0"}}));
  EXPECT_FALSE(Eval(rule, {{"arg_a", "1"}, {"arg_b", "2"}, {"arg_d", "6"}}));
  EXPECT_FALSE(Eval(rule, {{"arg_a", "1"}, {"arg_b", "2"}, {"arg_e", "xy"}}));
  EXPECT_FALSE(Eval(rule, {{"arg_b", "2"}}));
  // A Form A list may hold groups, and a group may hold lists.
  const char* mixed = R"([["arg_a", "==", "1"], ["OR", [["arg_b", "==", "2"], ["arg_c", "==", "3"]],
                           ["arg_d", "==", "4"]]])";
  EXPECT_TRUE(Eval(mixed, {{"arg_a", "1"}, {"arg_b", "2"}, {"arg_c", "3"}}));
  EXPECT_FALSE(Eval(mixed, {{"arg_a", "1"}, {"arg_b", "2"}}));
  EXPECT_TRUE(Eval(mixed, {{"arg_a", "1"}, {"arg_d", "4"}}));
}

TEST(ExprTest, ShortCircuits) {
  ExprConstPtr and_rule = MustCompile(R"([["arg_a", "==", "1"], ["arg_b", "==", "2"]])");
  FakeRequestVars vars{{"arg_a", "0"}};
  EXPECT_FALSE(and_rule->Eval(vars));
  EXPECT_EQ(vars.gets, 1);
  ExprConstPtr or_rule = MustCompile(R"(["OR", ["arg_a", "==", "0"], ["arg_b", "==", "2"]])");
  FakeRequestVars vars2{{"arg_a", "0"}};
  EXPECT_TRUE(or_rule->Eval(vars2));
  EXPECT_EQ(vars2.gets, 1);
}

TEST(ExprTest, VariablesAreCompiled) {
  ExprConstPtr e = MustCompile(R"([["http_X_Api_Key", "==", "k"]])");
  FakeRequestVars vars;
  vars.Set("http_X_Api_Key", "k");
  EXPECT_TRUE(e->Eval(vars));
  ASSERT_NE(vars.last, nullptr);
  EXPECT_EQ(vars.last->kind, VarRef::Kind::kHeader);
  EXPECT_EQ(vars.last->name, "x-api-key");
  ExprConstPtr r = MustCompile(R"([["remote_addr", "ipmatch", "10.0.0.0/8"]])");
  FakeRequestVars addr{{"remote_addr", "10.9.8.7"}};
  EXPECT_TRUE(r->Eval(addr));
  EXPECT_EQ(addr.last->kind, VarRef::Kind::kBuiltin);
  EXPECT_EQ(addr.last->builtin, BuiltinVar::kRemoteAddr);
  ExprConstPtr p = MustCompile(R"([["uri_param_id", "~~", "^[0-9]+$"]])");
  FakeRequestVars param{{"uri_param_id", "42"}};
  EXPECT_TRUE(p->Eval(param));
  EXPECT_EQ(param.last->kind, VarRef::Kind::kUriParam);
}

}  // namespace
}  // namespace turnpike::expr

namespace turnpike::expr {
namespace {

TEST(ExprTest, ReadsReportsTheKindsOfVariablesUsed) {
  ExprConstPtr plain = MustCompile(R"([["arg_a", "==", "1"], ["http_x", "~~", "y"]])");
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(plain->Reads(VarRef::Kind::kPostArg));
  EXPECT_TRUE(plain->Reads(VarRef::Kind::kArg));
  EXPECT_TRUE(plain->Reads(VarRef::Kind::kHeader));
  // A nested group still counts.
  ExprConstPtr nested =
      MustCompile(R"(["OR", ["arg_a", "==", "1"],
                          ["!AND", ["arg_b", "==", "2"], ["post_arg_name", "==", "x"]]])");
  ASSERT_NE(nested, nullptr);
  EXPECT_TRUE(nested->Reads(VarRef::Kind::kPostArg));
  ExprConstPtr empty = MustCompile("[]");
  ASSERT_NE(empty, nullptr);
  EXPECT_FALSE(empty->Reads(VarRef::Kind::kPostArg));
}

}  // namespace
}  // namespace turnpike::expr
