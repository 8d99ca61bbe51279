// FindHeadEnd / FirstLineLength: locating a message head in a growing read buffer.
#include "http/parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>

namespace turnpike::http {
namespace {

constexpr std::string_view kHead = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";

TEST(FindHeadEndTest, FindsCrlfTerminator) {
  size_t scan = 0;
  EXPECT_EQ(FindHeadEnd(kHead, &scan), kHead.size());
}

TEST(FindHeadEndTest, ReturnsHeadLengthWhenBodyOrNextRequestFollows) {
  std::string buf = std::string(kHead) + "body bytes\r\n\r\nmore";
  size_t scan = 0;
  EXPECT_EQ(FindHeadEnd(buf, &scan), kHead.size());
}

TEST(FindHeadEndTest, FindsBareLfTerminator) {
  constexpr std::string_view head = "GET / HTTP/1.1\nHost: a\n\n";
  size_t scan = 0;
  EXPECT_EQ(FindHeadEnd(head, &scan), head.size());
}

TEST(FindHeadEndTest, FindsLfThenCrlfTerminator) {
  constexpr std::string_view head = "GET / HTTP/1.1\nHost: a\n\r\n";
  size_t scan = 0;
  EXPECT_EQ(FindHeadEnd(head, &scan), head.size());
}

TEST(FindHeadEndTest, NotFoundReturnsZeroAndAdvancesScanPos) {
  constexpr std::string_view partial = "GET / HTTP/1.1\r\nHost: a\r\n";
  size_t scan = 0;
  EXPECT_EQ(FindHeadEnd(partial, &scan), 0u);
  EXPECT_EQ(scan, partial.size());

  scan = 0;
  EXPECT_EQ(FindHeadEnd("", &scan), 0u);
  EXPECT_EQ(scan, 0u);

  scan = 0;
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1", &scan), 0u);  // no newline at all
  EXPECT_EQ(scan, 14u);
}

TEST(FindHeadEndTest, SingleLineEndingsInsideHeadAreNotATerminator) {
  // "\r\r\n" and "\n \n" are not blank lines.
  size_t scan = 0;
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\nA: b\r\r\nC: d\n \n", &scan), 0u);
}

// The buffer grows one read at a time; the terminator can be split at every position.
TEST(FindHeadEndTest, TerminatorSplitAcrossIncrementalCalls) {
  for (std::string_view head : {std::string_view("GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
                                std::string_view("GET / HTTP/1.1\nHost: a\n\n"),
                                std::string_view("GET / HTTP/1.1\r\nHost: a\n\r\n")}) {
    for (size_t split = 1; split < head.size(); ++split) {
      SCOPED_TRACE(::testing::Message()
                   << "head=" << ::testing::PrintToString(head) << " split=" << split);
      size_t scan = 0;
      EXPECT_EQ(FindHeadEnd(head.substr(0, split), &scan), 0u);
      EXPECT_EQ(scan, split);
      EXPECT_EQ(FindHeadEnd(head, &scan), head.size());
    }
  }
}

TEST(FindHeadEndTest, ByteByByteGrowth) {
  std::string head = "POST /upload HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\n\r\n";
  std::string full = head + "abc";
  size_t scan = 0;
  size_t found = 0;
  size_t len = 0;
  for (len = 1; len <= full.size() && found == 0; ++len) {
    found = FindHeadEnd(std::string_view(full).substr(0, len), &scan);
  }
  EXPECT_EQ(found, head.size());
  EXPECT_EQ(len - 1, head.size());  // found as soon as the last terminator byte arrived
}

TEST(FindHeadEndTest, ResumesWithoutRescanningEarlierBytes) {
  // A "\n\n" before scan_pos - 3 is not looked at again: the caller promised those bytes were
  // already scanned. This is what makes the scan linear in the head size.
  std::string buf = "x\n\nyyyyyyyyyy";
  size_t scan = 10;
  EXPECT_EQ(FindHeadEnd(buf, &scan), 0u);
  EXPECT_EQ(scan, buf.size());
}

TEST(FindHeadEndTest, ScanPosIsNotChangedWhenFound) {
  size_t scan = 5;
  EXPECT_EQ(FindHeadEnd(kHead, &scan), kHead.size());
  EXPECT_EQ(scan, 5u);
}

TEST(FirstLineLengthTest, ExcludesLineEnding) {
  EXPECT_EQ(FirstLineLength("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 14u);
  EXPECT_EQ(FirstLineLength("GET / HTTP/1.1\nHost: a\n\n"), 14u);
}

TEST(FirstLineLengthTest, WholeInputWhenNoLineEndYet) {
  EXPECT_EQ(FirstLineLength("GET /very/long/target"), 21u);
  EXPECT_EQ(FirstLineLength("GET / HTTP/1.1\r"), 15u);  // CR alone is not a line end
  EXPECT_EQ(FirstLineLength(""), 0u);
}

TEST(FirstLineLengthTest, EmptyFirstLine) {
  EXPECT_EQ(FirstLineLength("\r\nGET"), 0u);
  EXPECT_EQ(FirstLineLength("\nGET"), 0u);
}

// The reference definition: the first "\n\n" or "\n\r\n" ends the head.
size_t NaiveHeadEnd(std::string_view data) {
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] != '\n') continue;
    if (i + 1 < data.size() && data[i + 1] == '\n') return i + 2;
    if (i + 2 < data.size() && data[i + 1] == '\r' && data[i + 2] == '\n') return i + 3;
  }
  return 0;
}

// Heads long enough for the 16-byte blocks, with the terminator at every offset inside a
// block and across two, found whole and when the buffer grows by 1..17 bytes per read.
TEST(FindHeadEndTest, AgreesWithTheReferenceAtEveryOffsetAndGrowth) {
  for (size_t pad = 0; pad < 40; ++pad) {
    for (std::string_view end : {"\r\n\r\n", "\n\n", "\n\r\n"}) {
      // Near misses first: a lone LF, "\r\r\n", "\n \n".
      std::string head = "GET / HTTP/1.1\r\nHost: a\r\nX-Pad: " + std::string(pad, 'p') +
                         "\r\nX-Lf: a\nb\r\r\nc\n \nd" + std::string(end);
      std::string buf = head + "GET /next HTTP/1.1\r\n\r\n";
      ASSERT_EQ(NaiveHeadEnd(buf), head.size()) << pad;
      size_t scan = 0;
      ASSERT_EQ(FindHeadEnd(buf, &scan), head.size()) << pad;
      for (size_t step = 1; step <= 17; ++step) {
        scan = 0;
        size_t found = 0;
        for (size_t len = step; found == 0; len += step) {
          std::string_view seen(buf.data(), std::min(len, buf.size()));
          found = FindHeadEnd(seen, &scan);
          ASSERT_EQ(found, NaiveHeadEnd(seen)) << pad << " " << step << " " << len;
          if (len >= buf.size()) break;
        }
        ASSERT_EQ(found, head.size()) << pad << " " << step;
      }
    }
  }
}

// Random strings of CR, LF and one other byte (every near miss of a terminator), at every
// length up to 80, whole and grown by a random step: the first terminator, or none.
TEST(FindHeadEndTest, AgreesWithTheReferenceOnRandomCrLfStrings) {
  std::mt19937 rng(7);
  for (int round = 0; round < 20000; ++round) {
    std::string buf(std::uniform_int_distribution<size_t>(0, 80)(rng), 'a');
    for (char& c : buf) c = "\r\na\n"[std::uniform_int_distribution<int>(0, 3)(rng)];
    size_t scan = 0;
    ASSERT_EQ(FindHeadEnd(buf, &scan), NaiveHeadEnd(buf)) << round;
    const size_t step = std::uniform_int_distribution<size_t>(1, 20)(rng);
    scan = 0;
    for (size_t len = step;; len += step) {
      std::string_view seen(buf.data(), std::min(len, buf.size()));
      const size_t found = FindHeadEnd(seen, &scan);
      ASSERT_EQ(found, NaiveHeadEnd(seen)) << round << " " << len;
      if (found != 0 || len >= buf.size()) break;
    }
  }
}

}  // namespace
}  // namespace turnpike::http
