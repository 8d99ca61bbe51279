// Expr's compiled clause, shared by expr.cc (evaluation) and expr_compile.cc (compilation).
// Not part of the module's interface.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "expr/expr.h"
#include "expr/ip_matcher.h"
#include "expr/regex.h"

namespace turnpike::expr {

enum class Op : uint8_t { kEq, kNe, kGt, kGe, kLt, kLe, kRegex, kIn, kHas, kIpMatch };

// The JSON type of the right-hand value, as far as the operators care.
enum class Right : uint8_t {
  kNil,  // absent or JSON null
  kString,
  kNumber,
  kOther,  // true/false, array, object: never equal to a string
};

struct Expr::Clause {
  VarRef var;
  Op op = Op::kEq;
  bool negate = false;
  Right right = Right::kNil;
  std::string text;                    // Right::kString
  double number = 0;                   // Right::kNumber
  std::optional<double> right_number;  // tonumber(right), for > >= < <=
  std::vector<std::string> in;         // `in`: the string elements of the right-hand array
  std::optional<Regex> regex;          // ~~ and ~*
  std::optional<IpMatcher> ip;         // ipmatch
};

}  // namespace turnpike::expr
