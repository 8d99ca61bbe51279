// Regex: a PCRE2 pattern compiled once (with JIT when available) for unanchored searches, as
// ngx.re.find(subject, pattern, "jo") / "joi" do for lua-resty-expr's `~~` and `~*`.
//
// Compiled on the control thread; afterwards Search() may be called from any number of
// threads at once (the compiled code is read-only; match data is per thread, see regex.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "turnpike/status.h"

struct pcre2_real_code_8;        // pcre2_code with PCRE2_CODE_UNIT_WIDTH 8
struct pcre2_real_match_data_8;  // pcre2_match_data with PCRE2_CODE_UNIT_WIDTH 8

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
  // Worker, hot path. The first match in `subject` with its groups in `match_data` (the
  // caller's, with room for capture_count() + 1 pairs to see every group). Returns PCRE2's
  // code: > 0 the pairs set, 0 "matched, match data too small", < 0 no match or an error
  // (PCRE2_ERROR_NOMATCH for none). No allocation.
  int Match(std::string_view subject, pcre2_real_match_data_8* match_data) const;
  // The pattern's capture groups (not counting the whole match).
  uint32_t capture_count() const { return capture_count_; }

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
  uint32_t capture_count_ = 0;
  std::string pattern_;
};

}  // namespace turnpike::expr
