#define PCRE2_CODE_UNIT_WIDTH 8
#include "plugins/response_rewrite/substitution.h"

#include <pcre2.h>

namespace turnpike::plugins::response_rewrite {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Length of the UTF-8 sequence starting with byte `c` (1 for invalid bytes).
size_t Utf8Length(unsigned char c) {
  if (c >= 0xf0) return 4;
  if (c >= 0xe0) return 3;
  if (c >= 0xc0) return 2;
  return 1;
}

}  // namespace

MatchBlock::MatchBlock(uint32_t pairs) {
  if (pairs > 0) Get(pairs);
}

MatchBlock::~MatchBlock() {
  if (data_ != nullptr) pcre2_match_data_free(data_);
}

pcre2_match_data* MatchBlock::Get(uint32_t pairs) {
  if (data_ == nullptr || pcre2_get_ovector_count(data_) < pairs) {
    if (data_ != nullptr) pcre2_match_data_free(data_);
    // At least 16 pairs, so that most patterns never make it grow.
    data_ = pcre2_match_data_create(pairs < 16 ? 16 : pairs, nullptr);
  }
  return data_;
}

void Substitution::CodeDeleter::operator()(pcre2_real_code_8* code) const { pcre2_code_free(code); }

StatusOr<Substitution> Substitution::Compile(std::string_view pattern, std::string_view replace,
                                             std::string_view options, bool global) {
  uint32_t flags = 0;
  for (char c : options) {
    switch (c) {
      case 'i': flags |= PCRE2_CASELESS; break;
      case 'm': flags |= PCRE2_MULTILINE; break;
      case 's': flags |= PCRE2_DOTALL; break;
      case 'x': flags |= PCRE2_EXTENDED; break;
      case 'u': flags |= PCRE2_UTF; break;
      case 'U': flags |= PCRE2_UTF | PCRE2_MATCH_INVALID_UTF; break;
      case 'a': flags |= PCRE2_ANCHORED; break;
      case 'D': flags |= PCRE2_DUPNAMES; break;
      case 'J': flags |= PCRE2_ALT_BSUX | PCRE2_MATCH_UNSET_BACKREF; break;
      case 'j':
      case 'o':
      case 'd':
        break;
      default:
        return Status::Error("unknown flag \"" + std::string(1, c) + "\" (flags \"" +
                             std::string(options) + "\")");
    }
  }
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   flags, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return Status::Error(std::string("pcre2_compile() failed: ") +
                         reinterpret_cast<const char*>(message) + " at offset " +
                         std::to_string(offset));
  }
  Substitution s;
  s.code_.reset(code, CodeDeleter());
  s.jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  // The pattern may turn UTF mode on itself ("(*UTF)"), as the 'u' flag does.
  uint32_t all_options = 0;
  pcre2_pattern_info(code, PCRE2_INFO_ALLOPTIONS, &all_options);
  s.utf_ = (all_options & PCRE2_UTF) != 0;
  s.check_utf_ = s.utf_ && (all_options & PCRE2_MATCH_INVALID_UTF) == 0;
  s.global_ = global;
  uint32_t captures = 0;
  pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &captures);
  s.pairs_ = captures + 1;

  // The template: literal runs and $N / ${N}; $$ is a '$'.
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) s.parts_.push_back({false, 0, std::move(literal)});
    literal.clear();
  };
  for (size_t i = 0; i < replace.size(); ++i) {
    char c = replace[i];
    if (c != '$') {
      literal.push_back(c);
      continue;
    }
    size_t j = i + 1;
    bool braced = j < replace.size() && replace[j] == '{';
    if (j < replace.size() && replace[j] == '$') {
      literal.push_back('$');
      i = j;
      continue;
    }
    if (braced) ++j;
    size_t digits_begin = j;
    uint64_t group = 0;
    while (j < replace.size() && IsDigit(replace[j]) && group < (1u << 20)) {
      group = group * 10 + static_cast<uint64_t>(replace[j] - '0');
      ++j;
    }
    bool ok = j > digits_begin && (!braced || (j < replace.size() && replace[j] == '}'));
    if (!ok) {
      return Status::Error("invalid capturing variable name in replace \"" + std::string(replace) +
                           "\" at offset " + std::to_string(i));
    }
    if (braced) ++j;
    flush();
    s.parts_.push_back({true, static_cast<uint32_t>(group), {}});
    i = j - 1;
  }
  flush();
  return s;
}

size_t Substitution::Apply(std::string_view in, std::string* out) const {
  MatchBlock block(pairs_);
  return Apply(in, &block, out);
}

size_t Substitution::Apply(std::string_view in, MatchBlock* block, std::string* out) const {
  out->clear();
  // PCRE2 rejects a null subject even when empty; an empty view may have one.
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(in.data() != nullptr ? in.data() : "");
  pcre2_match_data* md = block->Get(pairs_);
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  size_t pos = 0;     // where the next search starts
  size_t copied = 0;  // bytes of `in` already in `out`
  size_t matches = 0;
  // pcre2_jit_match() skips pcre2_match()'s UTF-8 check, and on invalid UTF-8 the JIT code
  // reads past the subject. So in UTF mode the first search goes through pcre2_match(), which
  // checks the whole subject once (then runs the same JIT code); later ones skip the check.
  bool validated = false;
  while (pos <= in.size()) {
    int rc;
    if (jit_ && (!check_utf_ || validated)) {
      rc = pcre2_jit_match(code_.get(), subject, in.size(), pos, 0, md, nullptr);
    } else {
      rc = pcre2_match(code_.get(), subject, in.size(), pos, validated ? PCRE2_NO_UTF_CHECK : 0, md,
                       nullptr);
      validated = check_utf_;
    }
    if (rc < 0) break;  // no (more) matches, invalid UTF-8, or a PCRE2 limit
    // Pairs past rc are stale (from earlier matches of any pattern with this block).
    const uint32_t set_pairs = static_cast<uint32_t>(rc);
    size_t from = ov[0];
    size_t to = ov[1];
    if (to < from) break;  // \K tricks that end before they start: stop, keep the rest
    out->append(in.substr(copied, from - copied));
    for (const Part& p : parts_) {
      if (!p.is_group) {
        out->append(p.literal);
      } else if (p.group < set_pairs && ov[2 * p.group] != PCRE2_UNSET) {
        out->append(in.substr(ov[2 * p.group], ov[2 * p.group + 1] - ov[2 * p.group]));
      }
    }
    copied = to;
    ++matches;
    if (!global_ || to >= in.size()) break;
    if (from == to) {
      // An empty match: copy the next character and search after it, as ngx.re.gsub does,
      // so "x" -> gsub("", "-") gives "-x-".
      size_t step = utf_ ? Utf8Length(static_cast<unsigned char>(in[to])) : 1;
      if (to + step > in.size()) step = in.size() - to;
      out->append(in.substr(to, step));
      copied = to + step;
      pos = to + step;
    } else {
      pos = to;
    }
  }
  out->append(in.substr(copied));
  return matches;
}

}  // namespace turnpike::plugins::response_rewrite
