// The log writer shared by the access log and file-logger: files shared by path, bounded
// buffers that drop (and count) what does not fit, rotation, and lines never mixed.

#include "logging/log_writer.h"

#include <gtest/gtest.h>
#include <stdio.h>

#include <string>
#include <thread>
#include <vector>

#include "support/files.h"

namespace turnpike::logging {
namespace {

TEST(LogWriterTest, SharesFilesByPathAndDropsWhenFull) {
  turnpike::testing::TempDir dir;
  LogWriter writer(std::chrono::milliseconds(1000), /*buffer_bytes=*/16);
  std::shared_ptr<LogFile> a = writer.File(dir.File("a"));
  EXPECT_EQ(writer.File(dir.File("a")), a);
  EXPECT_NE(writer.File(dir.File("b")), a);
  EXPECT_TRUE(a->Append("01234"));
  // 6 + 17 bytes would not fit in 16, and neither would 17 alone: dropped whether or not the
  // writer thread has taken the first line meanwhile (it is woken at half full).
  EXPECT_FALSE(a->Append("0123456789abcdef"));
  EXPECT_EQ(a->dropped(), 1u);
  writer.FlushNow();
  EXPECT_EQ(turnpike::testing::ReadFile(dir.File("a")), "01234\n");
}

TEST(LogWriterTest, ReopensARotatedFile) {
  turnpike::testing::TempDir dir;
  LogWriter writer(std::chrono::milliseconds(5));
  std::shared_ptr<LogFile> f = writer.File(dir.File("log"));
  f->Append("one");
  writer.FlushNow();
  ASSERT_EQ(rename(dir.File("log").c_str(), dir.File("log.1").c_str()), 0);
  writer.Reopen();  // what SIGUSR1 does in nginx; the writer also notices by itself within 1 s
  writer.FlushNow();
  f->Append("two");
  writer.FlushNow();
  EXPECT_EQ(turnpike::testing::ReadFile(dir.File("log.1")), "one\n");
  EXPECT_EQ(turnpike::testing::ReadFile(dir.File("log")), "two\n");
}

TEST(LogWriterTest, OpenChecksThePathNowFileDoesNot) {
  turnpike::testing::TempDir dir;
  LogWriter writer(std::chrono::milliseconds(5));
  StatusOr<std::shared_ptr<LogFile>> bad = writer.Open(dir.File("no/such/dir/access.log"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            dir.File("no/such/dir/access.log") + ": No such file or directory");
  StatusOr<std::shared_ptr<LogFile>> good = writer.Open(dir.File("access.log"));
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good.value(), writer.File(dir.File("access.log")));        // one file per path
  EXPECT_EQ(turnpike::testing::ReadFile(dir.File("access.log")), "");  // created at once

  // File() opens nothing until there is something to write; then a bad path counts.
  std::shared_ptr<LogFile> lazy = writer.File(dir.File("missing/x.log"));
  writer.FlushNow();
  EXPECT_EQ(lazy->write_errors(), 0u);
  lazy->Append("lost");
  writer.FlushNow();
  EXPECT_EQ(lazy->write_errors(), 1u);
  std::vector<LogWriter::FileStats> stats = writer.Stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[1].path, dir.File("missing/x.log"));
  EXPECT_EQ(stats[1].write_errors, 1u);
}

// Many threads appending to one file: every line arrives whole, none is lost (the buffer is
// large enough), and the destructor writes what is still queued.
TEST(LogWriterTest, LinesOfManyThreadsNeverInterleaveAndShutdownFlushes) {
  turnpike::testing::TempDir dir;
  constexpr int kThreads = 4;
  constexpr int kLines = 2000;
  {
    LogWriter writer(std::chrono::milliseconds(1));
    std::shared_ptr<LogFile> f = writer.File(dir.File("log"));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&f, t] {
        std::string line(100, static_cast<char>('a' + t));
        for (int i = 0; i < kLines; ++i) EXPECT_TRUE(f->Append(line));
      });
    }
    for (std::thread& t : threads) t.join();
  }  // ~LogWriter
  std::string text = turnpike::testing::ReadFile(dir.File("log"));
  ASSERT_EQ(text.size(), static_cast<size_t>(kThreads * kLines * 101));
  for (size_t pos = 0; pos < text.size(); pos += 101) {
    ASSERT_EQ(text[pos + 100], '\n') << "at " << pos;
    ASSERT_EQ(text.find_first_not_of(text[pos], pos), pos + 100) << "a mixed line at " << pos;
  }
}

}  // namespace
}  // namespace turnpike::logging
