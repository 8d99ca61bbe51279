#include "support/full_match.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <gtest/gtest.h>
#include <pcre2.h>

namespace turnpike::testing {

bool FullMatch(std::string_view s, const char* pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                                 PCRE2_ANCHORED | PCRE2_ENDANCHORED, &error, &offset, nullptr);
  if (re == nullptr) {
    ADD_FAILURE() << "bad test pattern " << pattern << " at " << offset;
    return false;
  }
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
  int rc = pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, md, nullptr);
  pcre2_match_data_free(md);
  pcre2_code_free(re);
  return rc >= 0;
}

}  // namespace turnpike::testing
