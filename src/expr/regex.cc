#define PCRE2_CODE_UNIT_WIDTH 8
#include "expr/regex.h"

#include <pcre2.h>

namespace turnpike::expr {
namespace {

// One match block per thread, shared by every Regex: Search() only asks whether there is a
// match, so a single ovector pair is enough for any pattern (PCRE2 then returns 0 for "matched,
// ovector too small"), and no per-pattern sizing is needed. Created on the thread's first
// search and freed at thread exit. The interpreter fallback (no JIT) also keeps its
// backtracking frames in this block, so they are reused across calls.
class ThreadMatchData {
 public:
  ThreadMatchData() : data_(pcre2_match_data_create(1, nullptr)) {}
  ~ThreadMatchData() { pcre2_match_data_free(data_); }
  ThreadMatchData(const ThreadMatchData&) = delete;
  ThreadMatchData& operator=(const ThreadMatchData&) = delete;
  pcre2_match_data* get() const { return data_; }

 private:
  pcre2_match_data* data_;
};

pcre2_match_data* MatchData() {
  thread_local ThreadMatchData data;
  return data.get();
}

}  // namespace

void Regex::CodeDeleter::operator()(pcre2_real_code_8* code) const { pcre2_code_free(code); }

StatusOr<Regex> Regex::Compile(std::string_view pattern, bool caseless) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   caseless ? PCRE2_CASELESS : 0, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return Status::Error("invalid regex '" + std::string(pattern) +
                         "': " + reinterpret_cast<const char*>(message) + " at offset " +
                         std::to_string(offset));
  }
  Regex r;
  r.code_.reset(code);
  r.pattern_ = std::string(pattern);
  // Without JIT support (or if JIT compilation fails) the interpreter is used.
  r.jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  // pcre2_jit_match() skips pcre2_match()'s UTF-8 check, and on invalid UTF-8 the JIT code
  // reads past the subject. A pattern may turn UTF mode on itself ("(*UTF)"); those take
  // pcre2_match(), which checks the subject and then runs the same JIT code.
  uint32_t all_options = 0;
  pcre2_pattern_info(code, PCRE2_INFO_ALLOPTIONS, &all_options);
  r.direct_jit_ = r.jit_ && (all_options & PCRE2_UTF) == 0;
  pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &r.capture_count_);
  return r;
}

bool Regex::Search(std::string_view subject) const {
  // PCRE2 10.42 rejects a null subject even when empty; an empty view may have one.
  const auto* text = reinterpret_cast<PCRE2_SPTR>(subject.data() != nullptr ? subject.data() : "");
  const int rc =
      direct_jit_ ? pcre2_jit_match(code_.get(), text, subject.size(), 0, 0, MatchData(), nullptr)
                  : pcre2_match(code_.get(), text, subject.size(), 0, 0, MatchData(), nullptr);
  return rc >= 0;
}

int Regex::Match(std::string_view subject, pcre2_match_data* match_data) const {
  const auto* text = reinterpret_cast<PCRE2_SPTR>(subject.data() != nullptr ? subject.data() : "");
  return direct_jit_ ? pcre2_jit_match(code_.get(), text, subject.size(), 0, 0, match_data, nullptr)
                     : pcre2_match(code_.get(), text, subject.size(), 0, 0, match_data, nullptr);
}

}  // namespace turnpike::expr
