#include "base/string_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace turnpike::base {
namespace {

TEST(CopyBytesTest, CopiesEveryLengthExactlyAndNothingAround) {
  std::string src;
  for (int i = 0; i < 64; ++i) src.push_back(static_cast<char>('a' + i % 26));
  for (size_t n = 0; n <= 40; ++n) {
    std::string dst(48, '#');
    CopyBytes(dst.data() + 4, src.data(), n);
    EXPECT_EQ(dst.substr(4, n), src.substr(0, n)) << n;
    EXPECT_EQ(dst.substr(0, 4), "####") << n;
    EXPECT_EQ(dst.substr(4 + n), std::string(44 - n, '#')) << n;
  }
  CopyBytes(nullptr, nullptr, 0);  // an empty view may have no data
}

TEST(StringWriterTest, AppendsAfterWhatTheStringHeldAndCutsTheGuess) {
  std::string out = "head:";
  {
    StringWriter w(&out, 64);
    w.Append("Content-Length: ");
    w.AppendDecimal(12345);
    w.Push('\r');
    w.Push('\n');
    w.Append(std::string_view());
    EXPECT_EQ(w.written(), "head:Content-Length: 12345\r\n");
  }
  EXPECT_EQ(out, "head:Content-Length: 12345\r\n");
}

TEST(StringWriterTest, GrowsPastAShortGuess) {
  std::string out;
  std::string expect;
  {
    StringWriter w(&out, 1);
    for (int i = 0; i < 200; ++i) {
      std::string piece(static_cast<size_t>(i % 37), static_cast<char>('A' + i % 26));
      w.Append(piece);
      expect += piece;
      w.AppendDecimal(UINT64_MAX);
      expect += "18446744073709551615";
      w.Push(',');
      expect += ',';
    }
    w.Finish();
    w.Finish();  // idempotent
  }
  EXPECT_EQ(out, expect);
}

TEST(StringWriterTest, ReusedStringKeepsItsCapacity) {
  std::string out;
  out.reserve(256);
  const char* data = out.data();
  for (int round = 0; round < 3; ++round) {
    out.clear();
    StringWriter w(&out, 128);
    w.Append("GET / HTTP/1.1\r\n");
    w.Finish();
    EXPECT_EQ(out, "GET / HTTP/1.1\r\n");
    EXPECT_EQ(out.data(), data);
  }
}

}  // namespace
}  // namespace turnpike::base
