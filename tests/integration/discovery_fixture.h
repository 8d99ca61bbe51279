// The fixture the discovery integration tests share (discovery_{dns,consul,kubernetes,nacos}_test):
// two backends "A" and "B" for the suite, a daemon `gw_` with one worker (one round robin: exact
// spreads) and a status server on a free port, started and waited for until /status/ready is 200,
// the spread of requests over the backends, polling until a spread is reached, the last nodes kept
// serving, and the loop over bad `discovery:` sections that must stop the daemon. Each suite says
// how its provider's section is written (Discovery()) and keeps its registry, routes and records.
//
// Thread: the test's thread only. Cost: Discovery and the Options helpers build text; the others
// send real requests to the daemon and wait for it.
#pragma once

#include <chrono>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "integration/itest.h"

namespace turnpike::itest {

class DiscoveryTest : public ::testing::Test {
 protected:
  // How many requests each backend answered ("" for a request that was not a 200 in Until).
  using Spreads = std::map<std::string, int>;

  // A bad `discovery:` section (the text below that key) and what the daemon says of it.
  struct BadSection {
    std::string section;
    std::string message;
  };

  // A and B live for the whole suite (each suite starts its own pair and stops it at its end).
  static void SetUpTestSuite() {
    a_ = StartBackend(kBackendBin, "A");
    b_ = StartBackend(kBackendBin, "B");
  }
  static void TearDownTestSuite() {
    a_.reset();
    b_.reset();
  }
  // Fails the test when a backend did not start; a suite's SetUp calls it first, under
  // ASSERT_NO_FATAL_FAILURE.
  void SetUp() override {
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
  }

  // The text under `discovery:` for this suite's provider, with `extra` (more of its fields in
  // the provider's indentation, or the whole section where the suite writes it so).
  virtual std::string Discovery(const std::string& extra) const = 0;

  // Options with a fresh status port (status_port_) and `discovery:` + Discovery(extra).
  TurnpikeOptions Options(const std::string& extra = "") {
    return OptionsWithSection(Discovery(extra));
  }
  // The same with `section` written under `discovery:` as it is.
  TurnpikeOptions OptionsWithSection(const std::string& section) {
    status_port_ = FreePort();
    TurnpikeOptions options;
    options.worker_processes = 1;  // one round robin: exact spreads and orders
    options.apisix_extra =
        "  status:\n    ip: 127.0.0.1\n    port: " + std::to_string(status_port_) + "\n";
    options.top_extra = "discovery:\n" + section;
    return options;
  }

  // Whether /status/ready answers 200 (every provider has its first nodes).
  bool Ready() { return Get(status_port_, "/status/ready").status == 200; }
  // Starts `gw` (gw_ unless given) with `routes` and `options` and waits until it is ready; fails
  // the test otherwise (use with ASSERT_NO_FATAL_FAILURE).
  void StartReady(Turnpike& gw, const std::string& routes, const TurnpikeOptions& options) {
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw, routes, options));
    ASSERT_TRUE(WaitForPort(status_port_, std::chrono::seconds(5)));
    ASSERT_TRUE(PollUntil([&] { return Ready(); }, std::chrono::seconds(10)))
        << Get(status_port_, "/status/ready").DebugString();
  }
  void StartReady(const std::string& routes, const TurnpikeOptions& options) {
    StartReady(gw_, routes, options);
  }

  // Which backends answered `n` requests to `path` through `gw` (gw_ unless given); each one that
  // is not a 200 is a test failure.
  Spreads Spread(Turnpike& gw, const std::string& path, int n) {
    Spreads seen;
    for (int i = 0; i < n; ++i) {
      HttpResponse r = Get(gw.port(), path);
      EXPECT_EQ(r.status, 200) << path << " request " << i << "\n" << r.DebugString();
      ++seen[BackendOf(r)];
    }
    return seen;
  }
  Spreads Spread(const std::string& path, int n) { return Spread(gw_, path, n); }

  // Polls until `n` requests to `path` spread exactly as `want`, a request that is not a 200
  // counting as "" (so `want` is not reached while any fails, and failures meanwhile are no test
  // failure); how long it took, or nullopt once `limit` passed.
  std::optional<std::chrono::milliseconds> Until(
      const std::string& path, const Spreads& want, int n,
      std::chrono::seconds limit = std::chrono::seconds(10)) {
    auto start = std::chrono::steady_clock::now();
    bool ok = PollUntil(
        [&] {
          Spreads seen;
          for (int i = 0; i < n; ++i) {
            HttpResponse r = Get(gw_.port(), path);
            ++seen[r.status == 200 ? BackendOf(r) : ""];
          }
          return seen == want;
        },
        limit);
    if (!ok) return std::nullopt;
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  }

  // For `duration`, requests to `path` two at a time spread exactly as `want` (the registry is
  // gone: the last nodes serve); a fatal failure at the first pair that does not (use with
  // ASSERT_NO_FATAL_FAILURE).
  void KeepsServing(const std::string& path, const Spreads& want,
                    std::chrono::milliseconds duration) {
    auto until = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < until) {
      ASSERT_EQ(Spread(path, 2), want);
    }
  }

  // Each of `cases`, written under `discovery:` as it is, stops a daemon starting with `routes`,
  // which names the case's message on stderr.
  void ExpectBadSectionsStopTheDaemon(const std::string& routes,
                                      std::initializer_list<BadSection> cases) {
    for (const BadSection& c : cases) {
      SCOPED_TRACE(c.section);
      Turnpike gw(kTurnpikeBin);
      EXPECT_FALSE(gw.Start(routes, OptionsWithSection(c.section)));
      EXPECT_NE(gw.Stderr().find(c.message), std::string::npos) << gw.Stderr();
    }
  }

  static inline std::unique_ptr<Backend> a_;
  static inline std::unique_ptr<Backend> b_;
  Turnpike gw_{kTurnpikeBin};
  int status_port_ = 0;
};

}  // namespace turnpike::itest
