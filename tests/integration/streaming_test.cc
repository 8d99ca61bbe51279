// 1 GiB through the proxy in each direction, streamed: the body must arrive intact and
// Turnpike's peak RSS (VmHWM, summed over its processes) must stay below 100 MiB (256 MiB
// under ASan, see kMaxStreamingPeakRssKb).
// Slow by nature; filter with --gtest_filter=-*Streaming* for a quick run.

#include <chrono>
#include <string>

#include "integration/itest.h"
#include "support/pattern.h"
#include "support/proc_status.h"

namespace turnpike::itest {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

class StreamingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backend_ = StartBackend(kBackendBin, "big"); }
  static void TearDownTestSuite() { backend_.reset(); }
  void SetUp() override {
    ASSERT_NE(backend_, nullptr);
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Fill(R"(
routes:
  - uri: /*
    upstream:
      nodes: [{NODE}]
      timeout: {connect: 5, send: 60, read: 60}
#END
)",
                                                   {{"NODE", Node(backend_->port())}})));
  }

  void ExpectSmallPeakRss(double seconds_taken) {
    ProcMemory m = TreeMemory(gw_.Pid());
    RecordProperty("turnpike_vm_hwm_kb", std::to_string(m.vm_hwm_kb));
    RecordProperty("mib_per_second", std::to_string(static_cast<int>(1024 / seconds_taken)));
    EXPECT_GT(m.vm_hwm_kb, 0) << "could not read /proc/" << gw_.Pid() << "/status";
    EXPECT_LT(m.vm_hwm_kb, kMaxStreamingPeakRssKb)
        << "Turnpike peaked at " << m.vm_hwm_kb / 1024 << " MiB while streaming 1 GiB";
  }

  static inline std::unique_ptr<Backend> backend_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(StreamingTest, StreamingUpload1GiB) {
  HttpConnection c(gw_.port());
  ASSERT_TRUE(c.connected()) << c.error();
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: upload.test\r\nContent-Length: " +
                     std::to_string(kGiB) + "\r\n\r\n"));
  PatternBuffer pattern(1 << 20);
  uint64_t fnv = kFnv1aOffset;
  for (uint64_t sent = 0; sent < kGiB;) {
    std::string_view slice =
        pattern.Slice(sent, static_cast<size_t>(std::min<uint64_t>(kGiB - sent, 1 << 20)));
    fnv = Fnv1a(slice, fnv);
    ASSERT_TRUE(c.Send(slice)) << "after " << sent << " bytes: " << c.error();
    sent += slice.size();
  }
  c.set_timeout(std::chrono::seconds(60));
  HttpResponse r = c.ReadResponse();
  double seconds_taken =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EchoedRequest e = Echo(r);
  EXPECT_EQ(e.body_length, kGiB);
  EXPECT_EQ(e.body_fnv1a, Fnv1aHex(fnv));
  ExpectSmallPeakRss(seconds_taken);
}

TEST_F(StreamingTest, StreamingDownload1GiB) {
  auto start = std::chrono::steady_clock::now();
  PatternChecker checker;
  ReadOptions options;
  options.body_sink = [&](std::string_view data) { checker.Feed(data); };
  HttpResponse r =
      Fetch(gw_.port(), HttpRequest{"GET", "/bytes/" + std::to_string(kGiB), {}, ""}, options);
  double seconds_taken =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(checker.bytes(), kGiB);
  EXPECT_TRUE(checker.ok()) << "first wrong byte at offset " << checker.first_mismatch();
  ExpectSmallPeakRss(seconds_taken);
}

}  // namespace
}  // namespace turnpike::itest
