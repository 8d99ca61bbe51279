// AresResolver on a real loop: `localhost` resolves from /etc/hosts to loopback, a name
// under `.invalid` fails at once without any query, callbacks never run inside Resolve(),
// Cancel() and Stop() silence pending lookups. No test contacts anything but loopback: the
// only names looked up are localhost and .invalid ones.
#include "discovery/ares_resolver.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <uv.h>

#include <string>

namespace turnpike::discovery {
namespace {

class AresResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uv_loop_init(&loop_);
    resolver_ = std::make_unique<AresResolver>(&loop_);
    ASSERT_TRUE(resolver_->Start().ok());
  }
  void TearDown() override {
    resolver_->Stop();
    uv_run(&loop_, UV_RUN_DEFAULT);
    resolver_.reset();
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }
  // Runs the loop until `*done` (each uv_run pass waits for I/O or a timer).
  void RunUntil(const bool* done) {
    for (int i = 0; i < 1000 && !*done; ++i) uv_run(&loop_, UV_RUN_ONCE);
  }

  uv_loop_t loop_{};
  std::unique_ptr<AresResolver> resolver_;
};

TEST_F(AresResolverTest, LocalhostResolvesToLoopback) {
  bool done = false;
  bool inside = true;
  Resolution got;
  resolver_->Resolve("localhost", [&](const Resolution& r) {
    EXPECT_FALSE(inside) << "callback ran inside Resolve()";
    got = r;
    done = true;
  });
  inside = false;
  RunUntil(&done);
  ASSERT_TRUE(done);
  ASSERT_TRUE(got.ok) << got.error;
  if (got.addr.ss_family == AF_INET) {
    auto* v4 = reinterpret_cast<const sockaddr_in*>(&got.addr);
    EXPECT_EQ(ntohl(v4->sin_addr.s_addr) >> 24, 127u);
  } else {
    ASSERT_EQ(got.addr.ss_family, AF_INET6);
    auto* v6 = reinterpret_cast<const sockaddr_in6*>(&got.addr);
    EXPECT_TRUE(IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr));
  }
}

TEST_F(AresResolverTest, InvalidTldFailsWithoutAQuery) {
  EXPECT_TRUE(AresResolver::IsSpecialInvalid("backend.invalid"));
  EXPECT_TRUE(AresResolver::IsSpecialInvalid("A.B.INVALID."));
  EXPECT_TRUE(AresResolver::IsSpecialInvalid("invalid"));
  EXPECT_FALSE(AresResolver::IsSpecialInvalid("invalid.example"));
  EXPECT_FALSE(AresResolver::IsSpecialInvalid("notinvalid"));
  bool done = false;
  Resolution got;
  resolver_->Resolve("backend.invalid", [&](const Resolution& r) {
    got = r;
    done = true;
  });
  EXPECT_FALSE(done);
  uv_run(&loop_, UV_RUN_NOWAIT);  // one loop pass: no network round trip involved
  ASSERT_TRUE(done);
  EXPECT_FALSE(got.ok);
  EXPECT_FALSE(got.error.empty());
}

TEST_F(AresResolverTest, CancelledLookupsDoNotCallBack) {
  bool called = false;
  uint64_t id = resolver_->Resolve("localhost", [&](const Resolution&) { called = true; });
  EXPECT_NE(id, 0u);
  resolver_->Cancel(id);
  bool other = false;
  resolver_->Resolve("x.invalid", [&](const Resolution&) { other = true; });
  RunUntil(&other);
  for (int i = 0; i < 5; ++i) uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_FALSE(called);
}

TEST_F(AresResolverTest, StopSilencesPendingLookups) {
  bool called = false;
  resolver_->Resolve("localhost", [&](const Resolution&) { called = true; });
  resolver_->Resolve("y.invalid", [&](const Resolution&) { called = true; });
  resolver_->Stop();
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_FALSE(called);
  // After Stop(), a lookup never calls back (nor crashes).
  resolver_->Resolve("localhost", [&](const Resolution&) { called = true; });
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace turnpike::discovery
