#include "expr/regex.h"

#include <gtest/gtest.h>

#include <string>

namespace turnpike::expr {
namespace {

TEST(RegexTest, SearchIsUnanchored) {
  StatusOr<Regex> r = Regex::Compile("b+c", false);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().jit());  // Debian's PCRE2 has JIT on x86-64
  EXPECT_TRUE(r.value().Search("abbbcd"));
  EXPECT_FALSE(r.value().Search("abd"));
  EXPECT_FALSE(r.value().Search(""));
  EXPECT_EQ(r.value().pattern(), "b+c");
}

TEST(RegexTest, Caseless) {
  StatusOr<Regex> r = Regex::Compile("^abc$", true);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().Search("AbC"));
  StatusOr<Regex> s = Regex::Compile("^abc$", false);
  EXPECT_FALSE(s.value().Search("AbC"));
}

TEST(RegexTest, SubjectWithNulAndEmptyView) {
  StatusOr<Regex> r = Regex::Compile("a\\x00b", false);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().Search(std::string_view("xa\0b", 4)));
  StatusOr<Regex> empty = Regex::Compile("^$", false);
  EXPECT_TRUE(empty.value().Search(std::string_view()));
}

// "(*UTF)" turns UTF mode on. pcre2_jit_match() does not check the subject, and its JIT code
// read past the end of a truncated sequence ("\xc3" took the next byte in the buffer, 'a',
// as its continuation and matched one character); such a subject must not match at all.
TEST(RegexTest, UtfPatternNeverMatchesInvalidUtf8) {
  StatusOr<Regex> r = Regex::Compile("(*UTF)^.$", false);
  ASSERT_TRUE(r.ok());
  const std::string buffer = "\xc3" "a";
  EXPECT_FALSE(r.value().Search(std::string_view(buffer.data(), 1)));
  EXPECT_FALSE(r.value().Search("\xff"));
  EXPECT_TRUE(r.value().Search("\xc3\xa9"));  // one character, two bytes
  StatusOr<Regex> bytes = Regex::Compile("^.$", false);
  EXPECT_TRUE(bytes.value().Search(std::string_view(buffer.data(), 1)));  // bytes mode
}

TEST(RegexTest, CompileError) {
  StatusOr<Regex> r = Regex::Compile("a(b", false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "invalid regex 'a(b': missing closing parenthesis at offset 3");
}

TEST(RegexTest, CatastrophicBacktrackingEndsAsNoMatch) {
  StatusOr<Regex> r = Regex::Compile("^(a+)+$", false);
  ASSERT_TRUE(r.ok());
  const std::string subject = std::string(64, 'a') + "b";
  EXPECT_FALSE(r.value().Search(subject));  // hits the match limit instead of hanging
}

}  // namespace
}  // namespace turnpike::expr
