// Substitution: one `filters` entry of response-rewrite, i.e. ngx.re.sub / ngx.re.gsub with a
// pattern, a replacement template and ngx.re option letters, compiled once with PCRE2 (JIT).
//
// Options (lua-resty-core's letters): i caseless, m multiline, s dotall, x extended,
// u UTF-8, U UTF-8 without validity check, a anchored, D duplicate names, J JavaScript
// compatibility; j (JIT), o (compile once) and d (DFA) change nothing here: patterns are
// always compiled once and JIT-compiled when PCRE2 can, and matching always uses the
// standard algorithm. Any other letter is an error: `unknown flag "h" (flags "h")`.
//
// In UTF mode without 'U' (the 'u' flag, or "(*UTF)" in the pattern) a subject that is not
// valid UTF-8 is left as it is: PCRE2 rejects it, as PCRE does under ngx.re.
//
// Replacement template (ngx.re.sub's): $0..$N and ${N} insert a capture ("" when that group
// did not take part or does not exist), $$ is a literal '$'; any other '$' is an error at
// load (nginx rejects it at the first substitution).
//
// Compiled on the control thread; Apply() may then run on any number of threads at once, each
// with a MatchBlock of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "turnpike/status.h"

struct pcre2_real_code_8;
struct pcre2_real_match_data_8;

namespace turnpike::plugins::response_rewrite {

// The PCRE2 match data Apply() fills, kept by the caller between calls (response-rewrite
// keeps one per worker in its worker state) so that matching allocates nothing once warm.
// Grows to the most capture groups asked for. Not thread-safe; movable.
class MatchBlock {
 public:
  // Room for `pairs` ovector pairs (capture groups + 1), allocated now.
  explicit MatchBlock(uint32_t pairs = 0);
  MatchBlock(MatchBlock&& o) noexcept : data_(std::exchange(o.data_, nullptr)) {}
  MatchBlock& operator=(MatchBlock&& o) noexcept {
    std::swap(data_, o.data_);
    return *this;
  }
  MatchBlock(const MatchBlock&) = delete;
  MatchBlock& operator=(const MatchBlock&) = delete;
  ~MatchBlock();

  // At least `pairs` ovector pairs; reallocated only when it has fewer.
  pcre2_real_match_data_8* Get(uint32_t pairs);

 private:
  pcre2_real_match_data_8* data_ = nullptr;
};

class Substitution {
 public:
  // Control thread. `global`: every match (gsub), else the first (sub). Errors name what is
  // wrong, e.g. `unknown flag "h" (flags "h")` or `pcre2_compile() failed: missing closing
  // parenthesis at offset 3`.
  static StatusOr<Substitution> Compile(std::string_view pattern, std::string_view replace,
                                        std::string_view options, bool global);

  // Worker, hot path. Writes `in` with the substitution applied to `out` (cleared first;
  // must not alias `in`), matching with `block`. Returns the number of matches replaced. No
  // allocation beyond the growth of `out` and of `block` (to pairs(), once).
  // A match that fails on a PCRE2 limit ends the substitution there (the rest is copied).
  size_t Apply(std::string_view in, MatchBlock* block, std::string* out) const;
  // Tests and tools: the same with a match block of its own (allocated per call).
  size_t Apply(std::string_view in, std::string* out) const;

  // The ovector pairs a match needs: capture groups + 1.
  uint32_t pairs() const { return pairs_; }

  bool jit() const { return jit_; }

 private:
  struct CodeDeleter {
    void operator()(pcre2_real_code_8* code) const;
  };
  // A piece of the replacement: literal text, or a capture group.
  struct Part {
    bool is_group;
    uint32_t group;       // when is_group
    std::string literal;  // otherwise
  };
  Substitution() = default;

  std::shared_ptr<pcre2_real_code_8> code_;
  bool jit_ = false;
  bool utf_ = false;        // UTF mode (the 'u' or 'U' flag, or "(*UTF)" in the pattern)
  bool check_utf_ = false;  // UTF mode without PCRE2_MATCH_INVALID_UTF: subjects are checked
  bool global_ = false;
  uint32_t pairs_ = 1;  // ovector pairs needed: capture groups + 1
  std::vector<Part> parts_;
};

}  // namespace turnpike::plugins::response_rewrite
