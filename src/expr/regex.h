// Regex: a PCRE2 pattern compiled once (with JIT when available) for unanchored searches, as
// ngx.re.find(subject, pattern, "jo") / "joi" do for lua-resty-expr's `~~` and `~*`.
//
// Compiled on the control thread; afterwards Search() may be called from any number of
// threads at once (the compiled code is read-only; match data is per thread, see regex.cc).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "turnpike/status.h"

struct pcre2_real_code_8;  // pcre2_code with PCRE2_CODE_UNIT_WIDTH 8

namespace turnpike::expr {

class Regex {
 public:
  // Control thread. Bytes, not UTF-8 (as ngx.re without the "u" flag), unless the pattern
  // starts with "(*UTF)": then a subject that is not valid UTF-8 never matches. Error:
  // "invalid regex '<pattern>': <PCRE2 message> at offset <n>".
  static StatusOr<Regex> Compile(std::string_view pattern, bool caseless);

  // Worker, hot path. Whether the pattern matches somewhere in `subject`. Allocation-free
  // except for one per-thread match block allocated by the first call on a thread. A match
  // that fails on a PCRE2 limit (pathological backtracking) counts as no match.
  bool Search(std::string_view subject) const;

  const std::string& pattern() const { return pattern_; }
  bool jit() const { return jit_; }

 private:
  struct CodeDeleter {
    void operator()(pcre2_real_code_8* code) const;
  };
  Regex() = default;

  std::unique_ptr<pcre2_real_code_8, CodeDeleter> code_;
  bool jit_ = false;
  bool direct_jit_ = false;  // pcre2_jit_match() is safe: JIT code and no UTF-8 check needed
  std::string pattern_;
};

}  // namespace turnpike::expr
