// turnpike::Regex over expr::Regex (the engine of routes' `vars` regexes), with the caller's
// match data for the groups.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "turnpike/regex.h"

#include <pcre2.h>

#include <utility>

#include "expr/regex.h"

namespace turnpike {

RegexMatch::RegexMatch(RegexMatch&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      pairs_(std::exchange(o.pairs_, 0)),
      size_(std::exchange(o.size_, 0)),
      set_(std::exchange(o.set_, 0)),
      subject_(o.subject_) {}

RegexMatch& RegexMatch::operator=(RegexMatch&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(pairs_, o.pairs_);
  std::swap(size_, o.size_);
  std::swap(set_, o.set_);
  std::swap(subject_, o.subject_);
  return *this;
}

RegexMatch::~RegexMatch() {
  if (data_ != nullptr) pcre2_match_data_free(data_);
}

void RegexMatch::Reserve(uint32_t groups) {
  const uint32_t pairs = groups + 1;
  if (data_ != nullptr && pairs_ >= pairs) return;
  if (data_ != nullptr) pcre2_match_data_free(data_);
  // At least 10 pairs ($0..$9), so that most patterns never make it grow.
  pairs_ = pairs < 10 ? 10 : pairs;
  data_ = pcre2_match_data_create(pairs_, nullptr);
  size_ = 0;
  set_ = 0;
}

std::optional<std::string_view> RegexMatch::group(uint32_t i) const {
  if (i >= set_) return std::nullopt;
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data_);
  if (ov[2 * i] == PCRE2_UNSET || ov[2 * i + 1] < ov[2 * i]) return std::nullopt;
  return subject_.substr(ov[2 * i], ov[2 * i + 1] - ov[2 * i]);
}

StatusOr<Regex> Regex::Compile(std::string_view pattern, bool caseless) {
  StatusOr<expr::Regex> re = expr::Regex::Compile(pattern, caseless);
  if (!re.ok()) return re.status();
  return Regex(std::make_shared<const expr::Regex>(std::move(re).value()));
}

Regex::Result Regex::Search(std::string_view subject, RegexMatch* m) const {
  m->Reserve(re_->capture_count());
  m->size_ = 0;
  m->set_ = 0;
  const int rc = re_->Match(subject, m->data_);
  if (rc == PCRE2_ERROR_NOMATCH) return kNoMatch;
  if (rc <= 0) return kError;  // 0 ("ovector too small") cannot happen after Reserve
  m->subject_ = subject;
  m->size_ = re_->capture_count() + 1;
  // Pairs from rc on are stale: groups after the last one that took part.
  m->set_ = static_cast<uint32_t>(rc);
  return kMatch;
}

uint32_t Regex::capture_count() const { return re_->capture_count(); }
const std::string& Regex::pattern() const { return re_->pattern(); }
bool Regex::jit() const { return re_->jit(); }

}  // namespace turnpike
