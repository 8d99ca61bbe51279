// Regex: a PCRE2 pattern compiled once, at load, with JIT where PCRE2 has it, and searched per
// request with its capture groups (ngx.re.match(subject, pattern, "jo")): proxy-rewrite's
// regex_uri. The engine is the one of routes' and conditions' `~~` / `~*`.
//
//   StatusOr<Regex> re = Regex::Compile("^/api/v(\\d+)/(.*)");       // control thread
//   RegexMatch& m = worker_state.match;                               // one per worker
//   if (re->Search(uri, &m) == Regex::kMatch) Use(m.group(2));        // views into `uri`
//
// Bytes, not UTF-8 (as ngx.re without the "u" flag), unless the pattern starts with "(*UTF)":
// then a subject that is not valid UTF-8 never matches.
//
// Threads: Compile() on the control thread; afterwards a Regex is immutable (copies share the
// compiled code) and Search() may run on any number of threads at once, each with a RegexMatch
// of its own (keep one per worker, in the plugin's worker state). Cost: one PCRE2 (JIT) match;
// no allocation once the RegexMatch has room for the pattern's groups (RegexMatch::Reserve
// when the worker state is made; Search grows it otherwise, once).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "turnpike/status.h"

struct pcre2_real_match_data_8;  // pcre2_match_data with PCRE2_CODE_UNIT_WIDTH 8

namespace turnpike {

namespace expr {
class Regex;
}

// The groups of the last successful Search() it was passed to. Not thread-safe; movable.
class RegexMatch {
 public:
  RegexMatch() = default;
  RegexMatch(RegexMatch&& o) noexcept;
  RegexMatch& operator=(RegexMatch&& o) noexcept;
  RegexMatch(const RegexMatch&) = delete;
  RegexMatch& operator=(const RegexMatch&) = delete;
  ~RegexMatch();

  // Room for `groups` capture groups (plus the whole match), allocated now; never shrinks.
  void Reserve(uint32_t groups);

  // After a kMatch: group i (0 = the whole match) as a view into the subject searched; nullopt
  // when that group did not take part in the match or the pattern has no such group.
  std::optional<std::string_view> group(uint32_t i) const;
  // After a kMatch: the pattern's groups + 1 (the indexes group() knows); 0 otherwise.
  uint32_t size() const { return size_; }

 private:
  friend class Regex;
  pcre2_real_match_data_8* data_ = nullptr;
  uint32_t pairs_ = 0;  // room in data_
  uint32_t size_ = 0;
  uint32_t set_ = 0;  // pairs the last match set (PCRE2's return code)
  std::string_view subject_;
};

class Regex {
 public:
  enum Result : uint8_t {
    kMatch,
    kNoMatch,
    kError,  // a PCRE2 limit (pathological backtracking), or invalid UTF-8 in UTF mode
  };

  // Control thread. Error: "invalid regex '<pattern>': <PCRE2 message> at offset <n>".
  static StatusOr<Regex> Compile(std::string_view pattern, bool caseless = false);

  // Worker, hot path. The first match in `subject` (unanchored, unless the pattern anchors
  // itself); its groups are left in `*m` as views into `subject` (valid while it is).
  // Allocates only when `m` has room for fewer than capture_count() + 1 pairs.
  Result Search(std::string_view subject, RegexMatch* m) const;

  // The pattern's capture groups (not counting the whole match).
  uint32_t capture_count() const;
  const std::string& pattern() const;
  bool jit() const;

 private:
  explicit Regex(std::shared_ptr<const expr::Regex> re) : re_(std::move(re)) {}
  std::shared_ptr<const expr::Regex> re_;
};

}  // namespace turnpike
