// A RequestVars backed by a map from the variable's name as written ("arg_a", "http_x_key"),
// counting lookups. Lookups do not allocate.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "turnpike/request_vars.h"

namespace turnpike::expr::testing {

class FakeRequestVars final : public RequestVars {
 public:
  FakeRequestVars() = default;
  FakeRequestVars(std::initializer_list<std::pair<const std::string, std::string>> values)
      : values_(values) {}

  std::optional<std::string_view> Get(const VarRef& var) override {
    ++gets;
    last = &var;
    auto it = values_.find(var.source);
    if (it == values_.end()) return std::nullopt;
    return std::string_view(it->second);
  }

  void Set(const std::string& name, std::string value) { values_[name] = std::move(value); }

  int gets = 0;
  const VarRef* last = nullptr;

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace turnpike::expr::testing
