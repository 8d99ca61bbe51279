#include "base/strings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace turnpike::base {
namespace {

TEST(StringsTest, EqualsIgnoreCaseFoldsOnlyAsciiLetters) {
  EXPECT_TRUE(EqualsIgnoreCase("Content-Length", "content-length"));
  EXPECT_TRUE(EqualsIgnoreCase("X-FORWARDED-FOR", "x-forwarded-for"));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
  EXPECT_FALSE(EqualsIgnoreCase("host", "hosts"));
  EXPECT_FALSE(EqualsIgnoreCase("content-lengtH", "content-length0"));
  // '@' (0x40) and '`' (0x60), '[' (0x5b) and '{' (0x7b) differ only in bit 0x20 but are not
  // letters; neither are bytes >= 0x80.
  EXPECT_FALSE(EqualsIgnoreCase("@@@@@@@@@", "`````````"));
  EXPECT_FALSE(EqualsIgnoreCase("[[[[[[[[[", "{{{{{{{{{"));
  EXPECT_FALSE(
      EqualsIgnoreCase("\xC1\xC1\xC1\xC1\xC1\xC1\xC1\xC1", "\xE1\xE1\xE1\xE1\xE1\xE1\xE1\xE1"));
  EXPECT_TRUE(
      EqualsIgnoreCase("\xC1\xC1\xC1\xC1\xC1\xC1\xC1\xC1", "\xC1\xC1\xC1\xC1\xC1\xC1\xC1\xC1"));
  // every byte pair against the reference definition
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      std::string x(9, static_cast<char>(a));
      std::string y(9, static_cast<char>(b));
      bool expected = AsciiLower(static_cast<char>(a)) == AsciiLower(static_cast<char>(b));
      ASSERT_EQ(EqualsIgnoreCase(x, y), expected) << a << " " << b;
    }
  }
}

// EqualsLowerName against the reference (EqualsIgnoreCase, whose lower-case side has only
// a-z, digits and '-') at every length from 0 to 40, every byte value at every position.
TEST(StringsTest, EqualsLowerNameAgreesWithEqualsIgnoreCase) {
  const std::string names = "x-forwarded-proto-0123456789-abcdefghijklmnopqrstuvwxyz";
  for (size_t n = 0; n <= 40; ++n) {
    const std::string lower = names.substr(names.size() - n);
    std::string upper = lower;
    for (char& c : upper) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
    EXPECT_TRUE(EqualsLowerName(lower, lower)) << lower;
    EXPECT_TRUE(EqualsLowerName(upper, lower)) << upper;
    EXPECT_FALSE(EqualsLowerName(lower + "a", lower)) << lower;
    for (size_t i = 0; i < n; ++i) {
      for (int b = 0; b < 256; ++b) {
        std::string s = upper;
        s[i] = static_cast<char>(b);
        ASSERT_EQ(EqualsLowerName(s, lower), EqualsIgnoreCase(s, lower))
            << lower << " byte " << b << " at " << i;
      }
    }
  }
}

// Every length from 0 to 40 (the whole-word loop, the overlapping last word, the two
// overlapping four-byte loads, the short loop), with one differing byte at each position, and
// the strings read from inside larger buffers so that no load may reach past them.
TEST(StringsTest, EqualsIgnoreCaseAtEveryLengthAndPosition) {
  const std::string upper = "CONTENT-TYPE/X-FORWARDED-FOR;HOST=ABCDEFGHIJ";
  const std::string lower = "content-type/x-forwarded-for;host=abcdefghij";
  for (size_t n = 0; n <= 40; ++n) {
    std::string a = "#" + upper.substr(0, n) + "#";
    std::string b = "!" + lower.substr(0, n) + "!";
    ASSERT_TRUE(EqualBytesIgnoreCase(a.data() + 1, b.data() + 1, n)) << n;
    for (size_t i = 0; i < n; ++i) {
      for (char other : {'0', '\x80', '`', '@'}) {
        std::string c = b;
        if (AsciiLower(c[1 + i]) == AsciiLower(other)) continue;
        c[1 + i] = other;
        ASSERT_FALSE(EqualBytesIgnoreCase(a.data() + 1, c.data() + 1, n)) << n << " " << i;
        ASSERT_FALSE(EqualBytesIgnoreCase(c.data() + 1, a.data() + 1, n)) << n << " " << i;
      }
    }
  }
}

TEST(StringsTest, ParsesSizesAndDurations) {
  EXPECT_EQ(ParseSize("8k"), 8192u);
  EXPECT_EQ(ParseSize("1M"), 1048576u);
  EXPECT_EQ(ParseSize("0"), 0u);
  EXPECT_FALSE(ParseSize("k"));
  EXPECT_FALSE(ParseSize("12x"));
  EXPECT_EQ(ParseDuration("60s"), 60.0);
  EXPECT_EQ(ParseDuration("500ms"), 0.5);
  EXPECT_EQ(ParseDuration("2m"), 120.0);
  EXPECT_EQ(ParseDuration("7"), 7.0);
  EXPECT_FALSE(ParseDuration("fast"));
}

TEST(StringsTest, TrimsAndLowers) {
  EXPECT_EQ(TrimWhitespace(" \ta b\t "), "a b");
  EXPECT_EQ(ToLower("MiXeD-Case"), "mixed-case");
  // AssignLower, eight bytes per step: every byte at every position of lengths 0 to 20.
  std::string out = "previous contents";
  for (size_t n = 0; n <= 20; ++n) {
    for (size_t at = 0; at < std::max<size_t>(n, 1); ++at) {
      for (int b = 0; b < 256; ++b) {
        std::string s(n, 'Q');
        if (n > 0) s[at] = static_cast<char>(b);
        std::string want = s;
        for (char& c : want) c = AsciiLower(c);
        AssignLower(&out, s);
        ASSERT_EQ(out, want) << n << " " << at << " " << b;
      }
    }
  }
}

TEST(StringsTest, FormUnescape) {
  EXPECT_EQ(HexDigitValue('7'), 7);
  EXPECT_EQ(HexDigitValue('b'), 11);
  EXPECT_EQ(HexDigitValue('F'), 15);
  EXPECT_EQ(HexDigitValue('g'), -1);
  std::string out = "x";
  AppendFormUnescaped(&out, "a+b%41%4a%zz%4");
  EXPECT_EQ(out, "xa bAJ%zz%4");  // appends; bad escapes stay as they are
}

TEST(StringsTest, Base64DecodeAsNginx) {
  std::string out = "x";
  EXPECT_TRUE(AppendBase64Decoded(&out, "dXNlcjpwYXNz"));
  EXPECT_EQ(out, "xuser:pass");  // appends
  out.clear();
  EXPECT_TRUE(AppendBase64Decoded(&out, "SGk=trailing ignored"));
  EXPECT_EQ(out, "Hi");
  out.clear();
  EXPECT_TRUE(AppendBase64Decoded(&out, "SGVsbA"));  // padding optional
  EXPECT_EQ(out, "Hell");
  out = "kept";
  EXPECT_FALSE(AppendBase64Decoded(&out, "S"));  // 4n+1 characters
  EXPECT_FALSE(AppendBase64Decoded(&out, "SGk*"));
  EXPECT_EQ(out, "kept");
}

TEST(StringsTest, AppendDecimalWritesEveryMagnitude) {
  uint64_t v = 0;
  for (int digits = 1; digits <= 20; ++digits) {
    for (uint64_t x : {v, v + 1, v + 9, v * 10 + 9}) {
      std::string out = "x";
      AppendDecimal(&out, x);
      EXPECT_EQ(out, "x" + std::to_string(x));
    }
    v = v * 10 + 9;
  }
  std::string out;
  AppendDecimal(&out, UINT64_MAX);
  EXPECT_EQ(out, "18446744073709551615");
  for (uint64_t x = 0; x < 1000; ++x) {
    out.clear();
    AppendDecimal(&out, x);
    EXPECT_EQ(out, std::to_string(x));
  }
}

}  // namespace
}  // namespace turnpike::base
