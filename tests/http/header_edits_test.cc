#include "http/header_edits.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parse_test_util.h"

namespace turnpike::http {
namespace {

std::vector<std::string> Lines(const HeaderEdits& edits) {
  std::vector<std::string> out;
  edits.ForEachSet([&](const HeaderEdit& e) { out.emplace_back(e.line); });
  return out;
}

TEST(HeaderEditsTest, TheLastSetOrRemoveOfANameWinsAndAddsKeepEarlierValues) {
  HeaderEdits edits;
  edits.Set("X-A", "1");
  edits.Add("x-b", "2");
  edits.Add("X-B", "3");
  edits.Set("x-a", "4");
  edits.Remove("X-C");
  EXPECT_EQ(Lines(edits), (std::vector<std::string>{"x-b: 2\r\n", "X-B: 3\r\n", "x-a: 4\r\n"}));
  EXPECT_TRUE(edits.Touches("X-A"));
  EXPECT_FALSE(edits.Touches("X-B"));  // adds keep the original
  EXPECT_TRUE(edits.Touches("x-c"));
  const HeaderEdit* a = edits.Decides("X-a");
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->remove);
  EXPECT_EQ(a->value, "4");
  const HeaderEdit* c = edits.Decides("x-c");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->remove);
  EXPECT_EQ(edits.Decides("x-d"), nullptr);
  edits.Set("X-C", "5");  // a set after a remove sends it again
  EXPECT_EQ(Lines(edits).back(), "X-C: 5\r\n");
}

TEST(HeaderEditsTest, ControlBytesGoOutEscapedButReadBackAsGiven) {
  HeaderEdits edits;
  const std::string value("a\r\nX-Injected: 1\x7f\t\0", 19);
  edits.Set("X-Id", value);
  edits.Set("X-Bad\nName", "v");
  const HeaderEdit* e = edits.Decides("x-id");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->value, value);
  EXPECT_EQ(e->safe_value, "a%0D%0AX-Injected: 1%7F%09%00");
  EXPECT_EQ(e->line, "X-Id: a%0D%0AX-Injected: 1%7F%09%00\r\n");
  EXPECT_EQ(Lines(edits).back(), "X-Bad%0AName: v\r\n");
  // Clean values of every length around the 8-byte steps of the check.
  for (size_t n = 0; n < 20; ++n) {
    std::string v(n, 'v');
    edits.Set("X-L", v);
    EXPECT_EQ(edits.Decides("x-l")->line, "X-L: " + v + "\r\n");
    if (n > 0) {
      v.back() = '\x01';
      edits.Set("X-L", v);
      EXPECT_EQ(edits.Decides("x-l")->safe_value, v.substr(0, n - 1) + "%01") << n;
    }
  }
}

// Lines of every length from 5 to 48 bytes (the inline check of 16 to 32 and the others),
// with each control byte and DEL at every position of the name and of the value.
TEST(HeaderEditsTest, AControlByteAnywhereInALineOfAnyLengthIsEscaped) {
  for (size_t value_size = 0; value_size <= 40; ++value_size) {
    const std::string name = "X-Abc";
    const std::string value(value_size, '\x80');  // bytes from 0x80 up are clean
    for (unsigned char bad : {0x00, 0x09, 0x0a, 0x0d, 0x1f, 0x7f}) {
      for (size_t at = 0; at < name.size() + value.size(); ++at) {
        std::string n = name;
        std::string v = value;
        (at < n.size() ? n[at] : v[at - n.size()]) = static_cast<char>(bad);
        HeaderEdits edits;
        edits.Set(n, v);
        ASSERT_EQ(Lines(edits).at(0),
                  test::EscapedControls(n) + ": " + test::EscapedControls(v) + "\r\n")
            << value_size << " " << int{bad} << " " << at;
      }
    }
    HeaderEdits edits;
    edits.Set(name, value);
    ASSERT_EQ(Lines(edits).at(0), name + ": " + value + "\r\n") << value_size;
  }
}

TEST(HasControlByteTest, FindsAControlByteAtEveryPositionOfEveryLength) {
  for (size_t n = 0; n <= 48; ++n) {
    std::string clean(n, 'a');
    for (size_t i = 0; i < n; ++i) clean[i] = static_cast<char>(i % 2 ? 0xe9 : 0x7e);
    EXPECT_FALSE(HasControlByte(clean)) << n;  // bytes from 0x80 up, '~', ' ' are fine
    EXPECT_FALSE(HasControlByte(std::string(n, ' '))) << n;
    if (n > 0) {
      EXPECT_TRUE(HasControlByte(std::string(n, ' '), 0x21)) << n;
    }
    for (size_t at = 0; at < n; ++at) {
      for (char bad : {'\0', '\r', '\n', '\x1f', '\x7f'}) {
        std::string s = clean;
        s[at] = bad;
        EXPECT_TRUE(HasControlByte(s)) << n << " " << at << " " << int(bad);
        EXPECT_EQ(FindControlByte(s), at);
      }
    }
  }
}

TEST(HeaderEditsTest, ViewsStayValidWhileMoreIsPushedAndAfterClearStorageIsReused) {
  HeaderEdits edits;
  std::vector<std::string_view> values;
  std::vector<std::string> expect;
  for (int i = 0; i < 300; ++i) {
    // Past one chunk (4 KiB), and one value larger than a chunk.
    std::string v = i == 150 ? std::string(10000, 'x') : "value-" + std::to_string(i);
    edits.Add("X-N", v);
    values.push_back(edits.Decides("X-N")->value);
    expect.push_back(v);
  }
  // A value read from an edit, pushed again (a plugin copying a header).
  edits.Set("X-Copy", edits.Decides("x-n")->value);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(values[i], expect[i]) << i;
  EXPECT_EQ(edits.Decides("x-copy")->value, "value-299");

  edits.Clear();
  EXPECT_TRUE(edits.empty());
  EXPECT_EQ(edits.Decides("x-n"), nullptr);
  edits.Set("X-A", "1");
  EXPECT_EQ(Lines(edits), std::vector<std::string>{"X-A: 1\r\n"});
}

}  // namespace
}  // namespace turnpike::http
