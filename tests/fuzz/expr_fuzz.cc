// Fuzz target: the vars DSL. Expr::Compile on a JSON rule, then Eval against request
// variables that are all missing, and against variables that take values from the input.
//
// Input: the rule as JSON text, then optionally '\0' and the values variables may take, one
// per line (none given: a fixed list of numbers, IPs and words). Which value a variable gets
// (or none) is a hash of its name.
//
// Checked: no crash, UB, exception or timeout (regexes included); evaluation is a function
// of the variables (the same answer twice); an empty rule is true.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "expr/expr.h"
#include "fuzz/fuzz_util.h"

namespace {

namespace expr = turnpike::expr;
using turnpike::RequestVars;
using turnpike::VarRef;
using turnpike::fuzz::InputReader;

constexpr size_t kMaxValues = 16;

class MissingVars final : public RequestVars {
 public:
  std::optional<std::string_view> Get(const VarRef&) override { return std::nullopt; }
};

// Each variable gets values[hash(name) % (n + 1)], the last slot meaning missing.
class HashedVars final : public RequestVars {
 public:
  explicit HashedVars(const std::vector<std::string_view>& values) : values_(values) {}
  std::optional<std::string_view> Get(const VarRef& var) override {
    uint32_t h = 2166136261u;
    for (char c : var.source) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    size_t i = h % (values_.size() + 1);
    if (i == values_.size()) return std::nullopt;
    return values_[i];
  }

 private:
  const std::vector<std::string_view>& values_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  InputReader in(turnpike::fuzz::AsText(data, size));
  std::string_view rule_text = in.Until('\0');
  std::vector<std::string_view> values;
  while (!in.empty() && values.size() < kMaxValues) values.push_back(in.Line());
  if (values.empty()) {
    values = {"1",   "10.0.0.1", "abc", "",   "::1",           "-2.5", "0x10",
              "GET", "1e400",    "nan", "Ab", "2001:db8::/32", "[::1]"};
  }

  nlohmann::json rule = nlohmann::json::parse(rule_text, nullptr, /*allow_exceptions=*/false);
  if (rule.is_discarded()) return 0;
  turnpike::StatusOr<expr::ExprConstPtr> compiled = expr::Expr::Compile(rule);
  if (!compiled.ok()) {
    FUZZ_CHECK(!compiled.status().message().empty());
    return 0;
  }
  const expr::Expr& e = *compiled.value();
  for (auto kind : {VarRef::Kind::kBuiltin, VarRef::Kind::kHeader, VarRef::Kind::kArg,
                    VarRef::Kind::kCookie, VarRef::Kind::kPostArg, VarRef::Kind::kUriParam}) {
    (void)e.Reads(kind);
  }
  MissingVars missing;
  const bool none = e.Eval(missing);
  if (e.empty()) FUZZ_CHECK(none);
  HashedVars vars(values);
  const bool first = e.Eval(vars);
  FUZZ_CHECK(e.Eval(vars) == first);
  FUZZ_CHECK(e.Eval(missing) == none);
  return 0;
}
